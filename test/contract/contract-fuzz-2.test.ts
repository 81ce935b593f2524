import { describeContractFuzz } from '../support/contract-fuzz';

// Shard 2 of 2 of the contract fuzzer (test/support/contract-fuzz.ts): the files run in parallel workers.
describeContractFuzz(1, 2);
