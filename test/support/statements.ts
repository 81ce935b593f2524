/** Statement helpers for tests: URL building and an RFC 4180 CSV parser. */

export function statementUrl(
  orgId: string,
  accountId: string,
  query: { from?: Date | string; to?: Date | string; format?: 'json' | 'csv'; limit?: number; starting_after?: string },
): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    params.set(key, value instanceof Date ? value.toISOString() : String(value));
  }
  const qs = params.toString();
  return `/api/business/organizations/${orgId}/accounts/${accountId}/statement${qs ? `?${qs}` : ''}`;
}

/** Parses RFC 4180 CSV (CRLF records, quoted fields with doubled quotes and embedded line breaks). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i];
    if (quoted) {
      if (char === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 1;
        } else quoted = false;
      } else field += char;
    } else if (char === '"') {
      if (field !== '') throw new Error(`stray quote in an unquoted field at ${i}`);
      quoted = true;
    } else if (char === ',') {
      row.push(field);
      field = '';
    } else if (char === '\r') {
      if (text[i + 1] !== '\n') throw new Error(`bare CR at ${i}`);
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i += 1;
    } else if (char === '\n') {
      throw new Error(`bare LF at ${i}`);
    } else field += char;
  }
  if (quoted) throw new Error('unterminated quoted field');
  if (field !== '' || row.length) throw new Error('the last record does not end with CRLF');
  return rows;
}
