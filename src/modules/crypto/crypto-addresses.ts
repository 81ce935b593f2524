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

/** Why an address is refused: not in the network's alphabet, too few or many bytes, a checksum that does not match, or an address of another network. */
export type AddressProblem = 'malformed' | 'wrong_length' | 'bad_checksum' | 'wrong_network';

/** An address accepted for `format`, written as the network writes it (EIP-55 for EVM). */
export type AddressCheck = { ok: true; address: string } | { ok: false; reason: AddressProblem };

function evmCheck(address: string): AddressCheck {
  if (!/^0x[0-9a-fA-F]*$/.test(address)) return { ok: false, reason: otherFormat(address, 'evm') ? 'wrong_network' : 'malformed' };
  if (address.length !== 42) return { ok: false, reason: 'wrong_length' };
  const written = eip55(Buffer.from(address.slice(2), 'hex'));
  // EIP-55 practice (as viem's isAddress): an all-lower-case address carries no checksum and is accepted; mixed case must match.
  if (address === address.toLowerCase() || written === address) return { ok: true, address: written };
  return { ok: false, reason: 'bad_checksum' };
}

function tronCheck(address: string): AddressCheck {
  let raw: Uint8Array;
  try {
    raw = base58.decode(address);
  } catch {
    return { ok: false, reason: /^0x[0-9a-fA-F]{40}$/.test(address) ? 'wrong_network' : 'malformed' };
  }
  if (raw.length !== 25) return { ok: false, reason: raw.length === 32 ? 'wrong_network' : 'wrong_length' };
  let bytes: Uint8Array;
  try {
    bytes = base58check.decode(address);
  } catch {
    return { ok: false, reason: 'bad_checksum' };
  }
  return bytes[0] === TRON_PREFIX ? { ok: true, address } : { ok: false, reason: 'wrong_network' };
}

function solanaCheck(address: string): AddressCheck {
  let raw: Uint8Array;
  try {
    raw = base58.decode(address);
  } catch {
    return { ok: false, reason: /^0x[0-9a-fA-F]{40}$/.test(address) ? 'wrong_network' : 'malformed' };
  }
  if (raw.length === 32) return { ok: true, address };
  return { ok: false, reason: otherFormat(address, 'solana') ? 'wrong_network' : 'wrong_length' };
}

const CHECKS: Record<AddressFormat, (address: string) => AddressCheck> = { evm: evmCheck, tron: tronCheck, solana: solanaCheck };

/**
 * Whether `address` is a well-formed TRON or Solana address, of a format other than `format`.
 * An EVM address is never asked about here: evmCheck asks of the other formats only, and
 * solanaCheck only of a string base58 decoded, which has no `0`, so never starts `0x`.
 */
function otherFormat(address: string, format: AddressFormat): boolean {
  const formats: AddressFormat[] = ['tron', 'solana'];
  return formats.some((other) => other !== format && isValidAddress(other, address));
}

/** Checks an external address for `format`: the accepted address (normalised), or why it is refused. */
export function checkAddress(format: AddressFormat, address: string): AddressCheck {
  return CHECKS[format](address);
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
