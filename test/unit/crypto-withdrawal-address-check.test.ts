import { base58 } from '@scure/base';
import { describe, expect, it } from 'vitest';
import { checkAddress, derivedAddress } from '../../src/modules/crypto';

const SECRET = 'a-test-secret-of-at-least-32-characters';
const USER = '7d9f2c4e-1b3a-4c5d-8e6f-0a1b2c3d4e5f';
const EVM = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const TRON = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t';
const SOLANA = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';

/** The address with its character at `index` replaced by another of the same alphabet. */
function altered(address: string, index: number, alphabet: string): string {
  const current = address[index] as string;
  const replacement = [...alphabet].find((c) => c !== current) as string;
  return address.slice(0, index) + replacement + address.slice(index + 1);
}

describe('withdrawal addresses: valid on every network', () => {
  it.each([
    ['evm', EVM],
    ['evm', derivedAddress(SECRET, 'evm', USER, 'USDC', 'base')],
    ['tron', TRON],
    ['tron', derivedAddress(SECRET, 'tron', USER, 'USDT', 'tron')],
    ['solana', SOLANA],
    ['solana', derivedAddress(SECRET, 'solana', USER, 'USDC', 'solana')],
  ] as const)('%s accepts %s as it is written', (format, address) => {
    expect(checkAddress(format, address)).toEqual({ ok: true, address });
  });

  it('accepts an all-lower-case EVM address (no checksum to check) and writes it in EIP-55', () => {
    expect(checkAddress('evm', EVM.toLowerCase())).toEqual({ ok: true, address: EVM });
  });
});

describe('withdrawal addresses: each way of being invalid', () => {
  it('a mixed-case EVM address whose EIP-55 checksum does not match', () => {
    expect(checkAddress('evm', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD')).toEqual({ ok: false, reason: 'bad_checksum' });
    expect(checkAddress('evm', EVM.toUpperCase().replace('0X', '0x'))).toEqual({ ok: false, reason: 'bad_checksum' });
  });

  it('a TRON address with one character changed fails its base58check checksum', () => {
    expect(checkAddress('tron', altered(TRON, 20, 'abcdefgh'))).toEqual({ ok: false, reason: 'bad_checksum' });
  });

  it.each([
    ['evm', EVM.slice(0, 40)],
    ['evm', `${EVM}00`],
    ['tron', TRON.slice(0, 30)],
    ['solana', SOLANA.slice(0, 30)],
    ['solana', base58.encode(new Uint8Array(33).fill(7))],
  ] as const)('%s refuses %s as the wrong length', (format, address) => {
    expect(checkAddress(format, address)).toEqual({ ok: false, reason: 'wrong_length' });
  });

  it.each([
    ['evm', TRON],
    ['evm', SOLANA],
    ['tron', EVM],
    ['tron', SOLANA],
    ['solana', TRON],
    ['solana', EVM.toLowerCase()],
  ] as const)('%s refuses %s, an address of another network', (format, address) => {
    expect(checkAddress(format, address)).toEqual({ ok: false, reason: 'wrong_network' });
  });

  it('a base58check address whose version byte is not TRON 0x41 is of another network', () => {
    // A Bitcoin P2PKH address: base58check, 21 bytes, version 0x00.
    expect(checkAddress('tron', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2')).toEqual({ ok: false, reason: 'wrong_network' });
  });

  it.each([
    ['evm', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAzz'],
    ['tron', 'T0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl0'],
    ['solana', 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTD0Ol'],
    // An EVM address with something before or after it is no address at all, on any network.
    ['evm', ` ${EVM}`],
    ['tron', ` ${EVM}`],
    ['tron', `${EVM}f`],
    ['solana', ` ${EVM}`],
    ['solana', `${EVM}f`],
  ] as const)('%s refuses %s, outside its alphabet', (format, address) => {
    expect(checkAddress(format, address)).toEqual({ ok: false, reason: 'malformed' });
  });
});
