import { RenderedJson } from '../contract';

/** The envelope of every JSON answer: `{ success, data, message? }`. */
export function envelopeOf(status: number, data: unknown, message: string | undefined): { success: boolean; data: unknown; message?: string } {
  return { success: status < 400, data, ...(message === undefined ? {} : { message }) };
}

/**
 * The envelope as `res.json` writes it. A `data` the database rendered (RenderedJson) is
 * spliced in as its text, unparsed.
 */
export function envelopeText(status: number, data: unknown, message: string | undefined): string {
  if (data instanceof RenderedJson) return `{"success":${status < 400},"data":${data.text}${message === undefined ? '' : `,"message":${JSON.stringify(message)}`}}`;
  return JSON.stringify(envelopeOf(status, data, message));
}
