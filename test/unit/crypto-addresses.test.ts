import { sha256 } from '@noble/hashes/sha2';
import { createBase58check } from '@scure/base';
import { describe, expect, it } from 'vitest';
import { derivedAddress, eip55, isValidAddress } from '../../src/modules/crypto';

const SECRET = 'a-test-secret-of-at-least-32-characters';
const USER = '7d9f2c4e-1b3a-4c5d-8e6f-0a1b2c3d4e5f';

describe('deposit addresses of every network', () => {
  it('are derived deterministically: the same for the same user, asset and network, different otherwise', () => {
    const address = derivedAddress(SECRET, 'evm', USER, 'USDC', 'ethereum');
    expect(derivedAddress(SECRET, 'evm', USER, 'USDC', 'ethereum')).toBe(address);
    expect(derivedAddress(SECRET, 'evm', USER, 'USDT', 'ethereum')).not.toBe(address);
    expect(derivedAddress(SECRET, 'evm', USER, 'USDC', 'base')).not.toBe(address);
    expect(derivedAddress('another-secret-of-at-least-32-characters', 'evm', USER, 'USDC', 'ethereum')).not.toBe(address);
  });

  it('are written as each network writes them, and each is valid for its own format only', () => {
    const evm = derivedAddress(SECRET, 'evm', USER, 'USDC', 'ethereum');
    const tron = derivedAddress(SECRET, 'tron', USER, 'USDT', 'tron');
    const solana = derivedAddress(SECRET, 'solana', USER, 'USDC', 'solana');
    expect(evm).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(tron).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/);
    expect(solana).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    expect([isValidAddress('evm', evm), isValidAddress('tron', tron), isValidAddress('solana', solana)]).toEqual([true, true, true]);
    // The wrong network's format.
    expect([isValidAddress('tron', evm), isValidAddress('evm', tron), isValidAddress('tron', solana), isValidAddress('solana', tron)]).toEqual([false, false, false, false]);
  });
});

describe('EIP-55 (Ethereum, Base)', () => {
  // The test vectors of EIP-55 itself.
  it.each(['0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359', '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB', '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb'])(
    'accepts %s and writes it the same from its bytes',
    (address) => {
      expect(isValidAddress('evm', address)).toBe(true);
      expect(eip55(Buffer.from(address.slice(2), 'hex'))).toBe(address);
    },
  );

  it('refuses a bad checksum, all lower case, a wrong length and non-hex digits', () => {
    expect(isValidAddress('evm', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD')).toBe(false);
    expect(isValidAddress('evm', '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed')).toBe(false);
    expect(isValidAddress('evm', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeA')).toBe(false);
    expect(isValidAddress('evm', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAedGG')).toBe(false);
    expect(isValidAddress('evm', '5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed')).toBe(false);
  });

  it('refuses 19 or 21 bytes written in EIP-55 all the same: an address is 20 bytes', () => {
    const bytes = Buffer.from('5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed5a', 'hex');
    for (const size of [19, 21]) expect(isValidAddress('evm', eip55(bytes.subarray(0, size))), `${size} bytes`).toBe(false);
    expect(isValidAddress('evm', eip55(bytes.subarray(0, 20)))).toBe(true);
  });
});

describe('TRON (base58check, 0x41) and Solana (base58, 32 bytes)', () => {
  it('accepts a known TRON address (the USDT contract) and refuses it with one character changed or cut', () => {
    const usdt = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t';
    expect(isValidAddress('tron', usdt)).toBe(true);
    expect(isValidAddress('tron', `${usdt.slice(0, -1)}u`)).toBe(false);
    expect(isValidAddress('tron', usdt.slice(0, -2))).toBe(false);
  });

  it('refuses base58check that is not 0x41 and 20 bytes: another version byte, or another length', () => {
    // A Bitcoin P2PKH address: base58check of 21 bytes, version 0x00.
    expect(isValidAddress('tron', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2')).toBe(false);
    const tronOf = (payload: number[]) => createBase58check(sha256).encode(Uint8Array.from([0x41, ...payload]));
    expect(isValidAddress('tron', tronOf(new Array<number>(20).fill(7)))).toBe(true);
    expect(isValidAddress('tron', tronOf(new Array<number>(19).fill(7)))).toBe(false);
    expect(isValidAddress('tron', tronOf(new Array<number>(21).fill(7)))).toBe(false);
  });

  it('accepts a known Solana key (the USDC mint) and refuses a wrong length or a character outside base58', () => {
    const mint = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
    expect(isValidAddress('solana', mint)).toBe(true);
    expect(isValidAddress('solana', mint.slice(0, 30))).toBe(false);
    expect(isValidAddress('solana', `${mint.slice(0, -1)}0`)).toBe(false);
  });
});
