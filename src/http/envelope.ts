import { RenderedJson } from '../contract';

/**
 * The envelope of a JSON answer, `{"success":...,"data":...,"message":...}`, as `res.json`
 * writes it. A `data` the database rendered (RenderedJson) is spliced in as its text, unparsed.
 */
export function envelopeText(status: number, data: unknown, message: string | undefined): string {
  const success = status < 400;
  if (data instanceof RenderedJson) return `{"success":${success},"data":${data.text}${message === undefined ? '' : `,"message":${JSON.stringify(message)}`}}`;
  return JSON.stringify({ success, data, ...(message === undefined ? {} : { message }) });
}
