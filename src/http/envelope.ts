import type { Response } from 'express';

/** The success envelope `{success: true, data, message?}`; every handler answers through it. */
export function sendData<T>(res: Response, status: number, data: T, message?: string): void {
  res.status(status).json(message === undefined ? { success: true, data } : { success: true, data, message });
}

export interface ListPage<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** Builds a cursor page from `limit + 1` rows fetched newest first. */
export function toListPage<T extends { id: string }>(rows: T[], limit: number): ListPage<T> {
  const hasMore = rows.length > limit;
  const data = hasMore ? rows.slice(0, limit) : rows;
  return { object: 'list', data, has_more: hasMore, next_cursor: hasMore ? (data[data.length - 1]?.id ?? null) : null };
}
