import type { Response } from 'express';

/** The success envelope `{success: true, data, message?}`; every handler answers through it. */
export function sendData<T>(res: Response, status: number, data: T, message?: string): void {
  res.status(status).json(message === undefined ? { success: true, data } : { success: true, data, message });
}
