/**
 * Writing JSON answers: success bodies and the API's one error shape (`apiErrorBody`), with the
 * status `API_ERROR_STATUS` assigns to each code unless the caller overrides it (429).
 */
import type { ServerResponse } from 'node:http';
import { API_ERROR_STATUS, apiErrorBody, type ApiErrorCode } from '../../lib/api/api-error.ts';
import type { Check } from '../../lib/api/snapshot.ts';

/** An answer computed by a handler, written by the server. */
export interface HttpAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** Extras of an error answer. */
export interface ErrorAnswerOptions {
  field?: string;
  checks?: Check[];
  /** A status other than the code's usual one (429 is sent with the code `conflict`). */
  status?: number;
  headers?: Record<string, string>;
}

/** A JSON answer. */
export function jsonAnswer(status: number, body: unknown, headers?: Record<string, string>): HttpAnswer {
  return headers === undefined ? { status, body } : { status, body, headers };
}

/** An answer with the API's error body. */
export function errorAnswer(code: ApiErrorCode, message: string, options: ErrorAnswerOptions = {}): HttpAnswer {
  const extras = {
    ...(options.field !== undefined ? { field: options.field } : {}),
    ...(options.checks !== undefined ? { checks: options.checks } : {}),
  };
  return jsonAnswer(options.status ?? API_ERROR_STATUS[code], apiErrorBody(code, message, extras), options.headers);
}

/** Writes an answer as JSON (`Cache-Control: no-store`: API answers describe a moment). */
export function sendAnswer(res: ServerResponse, answer: HttpAnswer): void {
  sendJsonText(res, answer.status, JSON.stringify(answer.body), answer.headers);
}

/**
 * Writes JSON text gzip-compressed, for clients that accept it. The caller passes the
 * compressed bytes so a large body (the snapshot) is compressed once per version, not per request.
 */
export function sendGzippedJson(res: ServerResponse, status: number, gzipped: Buffer): void {
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Encoding': 'gzip',
    'Content-Length': gzipped.length,
    'Cache-Control': 'no-store',
    Vary: 'Accept-Encoding',
  });
  res.end(gzipped);
}

/** Whether the request's Accept-Encoding allows gzip (q=0 excluded). */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  if (acceptEncoding === undefined) return false;
  return acceptEncoding.split(',').some((part) => {
    const [coding = '', ...params] = part.trim().split(';');
    if (coding.trim().toLowerCase() !== 'gzip' && coding.trim() !== '*') return false;
    return !params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p));
  });
}

/** Writes JSON text that is already serialized (the snapshot, serialized once per seq). */
export function sendJsonText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(text);
}
