/**
 * What an uploaded file is, read from its first bytes (its magic number), never from its name
 * or the Content-Type its sender declared: JPEG (FF D8 FF), PNG (89 50 4E 47 0D 0A 1A 0A) or
 * PDF (`%PDF-`). Three formats need three comparisons; a detection library (file-type, whose
 * maintained releases are ES modules only) would add a dependency to recognise formats that
 * are refused anyway.
 */
export type DocumentContentType = 'image/jpeg' | 'image/png' | 'application/pdf';

export const DOCUMENT_CONTENT_TYPES: readonly DocumentContentType[] = ['image/jpeg', 'image/png', 'application/pdf'];

const SIGNATURES: ReadonlyArray<{ type: DocumentContentType; magic: readonly number[] }> = [
  { type: 'image/jpeg', magic: [0xff, 0xd8, 0xff] },
  { type: 'image/png', magic: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { type: 'application/pdf', magic: [0x25, 0x50, 0x44, 0x46, 0x2d] },
];

/** The type the bytes are, or undefined when they are none of the accepted ones. */
export function detectContentType(bytes: Uint8Array): DocumentContentType | undefined {
  return SIGNATURES.find(({ magic }) => bytes.length > magic.length && magic.every((byte, i) => bytes[i] === byte))?.type;
}
