import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DOCUMENT_MAX_BYTES, DocumentService, detectContentType } from '../../src/modules/documents';
import { PiiCipher } from '../../src/pii-cipher';
import { withTransaction } from '../../src/db/transaction';
import { testKnex } from '../support/database';
import { createUser } from '../support/factories';

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('IHDR-not-really-an-image-but-png-signed')]);
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('JFIF body of the passport scan')]);
const PDF = Buffer.from('%PDF-1.7\nSelfie statement of Awa Traore\n%%EOF');

function service(): DocumentService {
  return new DocumentService({ cipher: new PiiCipher({ current: { id: 'test-1', key: crypto.randomBytes(32) }, previous: [] }), clock: () => new Date() });
}

describe('documents', () => {
  it('reads the type from the bytes: JPEG, PNG and PDF, nothing else', () => {
    expect(detectContentType(JPEG)).toBe('image/jpeg');
    expect(detectContentType(PNG)).toBe('image/png');
    expect(detectContentType(PDF)).toBe('application/pdf');
    expect(detectContentType(Buffer.from('GIF89a....'))).toBeUndefined();
    expect(detectContentType(Buffer.from('<html>%PDF-</html>'))).toBeUndefined();
    expect(detectContentType(Buffer.from([0xff, 0xd8]))).toBeUndefined();
  });

  it('stores a document encrypted: the column holds ciphertext under the key id, and it reads back', async () => {
    const documents = service();
    const user = await createUser();
    const stored = await withTransaction(testKnex(), (trx) => documents.store(trx, { ownerType: 'user', ownerId: user.id, kind: 'selfie', bytes: PDF }));
    expect(stored).toMatchObject({ contentType: 'application/pdf', sizeBytes: PDF.length });
    const row = (await testKnex()('uploaded_documents').where({ id: stored.id }).first()) as { ciphertext: Buffer; key_id: string; kind: string };
    expect(row.key_id).toBe('test-1');
    expect(row.ciphertext.includes(Buffer.from('Awa Traore'))).toBe(false);
    expect(row.ciphertext.includes(Buffer.from('%PDF'))).toBe(false);
    expect((await documents.read(testKnex(), stored.id))?.equals(PDF)).toBe(true);
  });

  it('refuses a file whose bytes are not an accepted type (422) and one over 5 MiB (413), storing nothing', async () => {
    const documents = service();
    const user = await createUser();
    await expect(
      withTransaction(testKnex(), (trx) => documents.store(trx, { ownerType: 'user', ownerId: user.id, kind: 'id_front', bytes: Buffer.from('MZ\x90\x00 an executable named passport.jpg') })),
    ).rejects.toMatchObject({ code: 'UnsupportedDocumentType', category: 'unprocessable' });
    const big = Buffer.alloc(DOCUMENT_MAX_BYTES + 1, 0);
    JPEG.copy(big);
    await expect(withTransaction(testKnex(), (trx) => documents.store(trx, { ownerType: 'user', ownerId: user.id, kind: 'id_front', bytes: big }))).rejects.toMatchObject({
      code: 'PayloadTooLarge',
      category: 'too_large',
    });
    expect(await documents.listOf(testKnex(), 'user', user.id)).toEqual([]);
  });

  it('erases the bytes of an owner and keeps the record of what was uploaded', async () => {
    const documents = service();
    const user = await createUser();
    const stored = await withTransaction(testKnex(), (trx) => documents.store(trx, { ownerType: 'user', ownerId: user.id, kind: 'id_front', bytes: JPEG }));
    expect(await documents.eraseAllOf(testKnex(), 'user', user.id)).toBe(1);
    expect(await documents.read(testKnex(), stored.id)).toBeUndefined();
    const [kept] = await documents.listOf(testKnex(), 'user', user.id);
    expect(kept).toMatchObject({ id: stored.id, kind: 'id_front', contentType: 'image/jpeg' });
    expect(kept?.erasedAt).toBeInstanceOf(Date);
  });
});
