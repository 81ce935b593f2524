import { describeContractFuzz } from '../support/contract-fuzz';

// Shard 1 of 2 of the contract fuzzer (test/support/contract-fuzz.ts): the files run in parallel workers.
describeContractFuzz(0, 2);
