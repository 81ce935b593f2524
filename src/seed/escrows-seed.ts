import type { Knex } from 'knex';
import type { Caller } from '../contract';
import type { CreateEscrowInput, EscrowCommand } from '../modules/escrows';
import type { Services } from '../services';
import { DEMO_ADMINISTRATOR_EMAIL, DEMO_OUTSIDER_EMAIL, findDemoUserId } from './identity-seed';

interface DemoEscrow {
  buyer: string;
  seller: string;
  input: Omit<CreateEscrowInput, 'role' | 'counterpartyIdentifier'>;
  /** The actions after creation, each by the buyer, the seller or the platform administrator. */
  steps: Array<['buyer' | 'seller' | 'administrator', EscrowCommand]>;
}

const fund: EscrowCommand = { action: 'fund' };
const deliver: EscrowCommand = { action: 'deliver', trackingReference: 'DHL-1234567890', note: 'Handed over at the shop.' };

/**
 * One demo escrow in every status a transaction can rest in, between the demo users (the
 * buyer creates each one): awaiting_funding, funded, delivered (inspection running),
 * disputed, released (accepted by the buyer, and by a split resolution), refunded, canceled.
 * `accepted` is never stored: the release happens with the acceptance.
 */
const DEMO_ESCROWS: DemoEscrow[] = [
  {
    buyer: 'owner@demo.example',
    seller: 'admin@demo.example',
    input: { amount: 500_000, currency: 'XOF', description: 'Used delivery motorbike', reference: 'ORDER-1042' },
    steps: [],
  },
  {
    buyer: 'owner@demo.example',
    seller: 'admin@demo.example',
    input: { amount: 120_000, currency: 'XOF', description: 'Four office chairs', feePayer: 'split' },
    steps: [['buyer', fund]],
  },
  {
    buyer: 'finance@demo.example',
    seller: 'admin@demo.example',
    input: { amount: 350_000, currency: 'XOF', description: 'Refurbished laptop', inspectionPeriodSeconds: 7 * 86_400 },
    steps: [['buyer', fund], ['seller', deliver]],
  },
  {
    buyer: 'owner@demo.example',
    seller: 'finance@demo.example',
    input: { amount: 80_000, currency: 'XOF', description: 'Colour laser printer', feePayer: 'seller' },
    steps: [['buyer', fund], ['seller', deliver], ['buyer', { action: 'dispute', reason: 'The printer does not power on.' }]],
  },
  {
    buyer: 'director@demo.example',
    seller: 'representative@demo.example',
    input: { amount: 250, currency: 'EUR', description: 'Website design', reference: 'WEB-7' },
    steps: [['buyer', fund], ['seller', deliver], ['buyer', { action: 'accept' }]],
  },
  {
    buyer: 'cashier@demo.example',
    seller: 'representative@demo.example',
    input: { amount: 60_000, currency: 'XOF', description: 'Second-hand phone' },
    steps: [['buyer', fund], ['seller', { action: 'refund' }]],
  },
  {
    buyer: 'owner@demo.example',
    seller: 'representative@demo.example',
    input: { amount: 45_000, currency: 'XOF', description: 'Bicycle' },
    steps: [['seller', { action: 'cancel' }]],
  },
  {
    buyer: 'owner@demo.example',
    seller: DEMO_OUTSIDER_EMAIL,
    input: { amount: 200_000, currency: 'XOF', description: 'Power generator' },
    steps: [
      ['buyer', fund],
      ['seller', deliver],
      ['buyer', { action: 'dispute', reason: 'Delivered without its cables.' }],
      ['administrator', { action: 'resolve', outcome: 'split', sellerAmount: 150_000, note: 'Cables missing: 50,000 XOF back to the buyer.' }],
    ],
  },
];

/** Last seed step (after the wallets): the demo escrows, through the escrow service's own rules. */
export async function seedEscrows(trx: Knex.Transaction, services: Services): Promise<void> {
  const administrator: Caller = { userId: await findDemoUserId(trx, DEMO_ADMINISTRATOR_EMAIL), sessionId: '', isAdmin: true };
  for (const demo of DEMO_ESCROWS) {
    const buyer: Caller = { userId: await findDemoUserId(trx, demo.buyer), sessionId: '', isAdmin: false };
    const seller: Caller = { userId: await findDemoUserId(trx, demo.seller), sessionId: '', isAdmin: false };
    const created = await services.escrows.create(trx, buyer, { ...demo.input, role: 'buyer', counterpartyIdentifier: demo.seller });
    for (const [who, command] of demo.steps) {
      const caller = who === 'buyer' ? buyer : who === 'seller' ? seller : administrator;
      await services.escrows.act(trx, caller, created.id, command);
    }
  }
}
