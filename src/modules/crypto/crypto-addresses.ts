import crypto from 'node:crypto';
import { keccak_256 } from '@noble/hashes/sha3';
import { sha256 } from '@noble/hashes/sha2';
import { base58, createBase58check } from '@scure/base';
import type { AddressFormat } from './crypto-catalog';

const base58check = createBase58check(sha256);
/** A TRON address is base58check of 0x41 then the 20 bytes of the account. */
const TRON_PREFIX = 0x41;

/** EIP-55: each hex letter upper case where the keccak-256 of the lower-case address has a nibble >= 8. */
export function eip55(addressBytes: Uint8Array): string {
  const hex = Buffer.from(addressBytes).toString('hex');
  const hash = Buffer.from(keccak_256(new TextEncoder().encode(hex))).toString('hex');
  let out = '0x';
  for (let i = 0; i < hex.length; i += 1) out += parseInt(hash[i] as string, 16) >= 8 ? (hex[i] as string).toUpperCase() : (hex[i] as string);
  return out;
}

/** An address of `format` written from key material (20 bytes for EVM and TRON, 32 for Solana are used). */
export function formatAddress(format: AddressFormat, material: Uint8Array): string {
  switch (format) {
    case 'evm':
      return eip55(material.subarray(0, 20));
    case 'tron':
      return base58check.encode(Uint8Array.from([TRON_PREFIX, ...material.subarray(0, 20)]));
    case 'solana':
      return base58.encode(material.subarray(0, 32));
  }
}

/**
 * The deposit address of a user for an asset on a network, derived deterministically (HMAC-SHA-256
 * of the three under the sandbox's secret): the same address on every call and every instance.
 */
export function derivedAddress(secret: string, format: AddressFormat, userId: string, asset: string, network: string): string {
  const material = crypto.createHmac('sha256', secret).update(`${userId}:${asset}:${network}`).digest();
  return formatAddress(format, material);
}

/** Whether `address` is well formed for `format` (checksum included). */
export function isValidAddress(format: AddressFormat, address: string): boolean {
  try {
    switch (format) {
      case 'evm': {
        if (!/^0x[0-9a-fA-F]{40}$/.test(address)) return false;
        return eip55(Buffer.from(address.slice(2), 'hex')) === address;
      }
      case 'tron': {
        const bytes = base58check.decode(address);
        return bytes.length === 21 && bytes[0] === TRON_PREFIX;
      }
      case 'solana':
        return base58.decode(address).length === 32;
    }
  } catch {
    return false;
  }
}
