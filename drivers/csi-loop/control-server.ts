/**
 * The control endpoint: plain HTTP with JSON bodies, bound to 127.0.0.1 only. Tests and the
 * demo use it to inject faults, read the call log and state, and simulate a node that vanished.
 * Routes (documented in README.md):
 *   GET    /healthz
 *   GET    /state                  driver identity + the persistent volume state
 *   GET    /calls                  ordered call log;      DELETE /calls clears it
 *   GET    /faults                 active faults;         DELETE /faults clears all
 *   PUT    /faults/<Method>        set a fault (body: FaultSpec)
 *   POST   /faults                 set a fault (body: { method, ...FaultSpec })
 *   DELETE /faults/<Method>        clear one fault
 *   POST   /volumes                create a volume without publishing it { volumeId, capacity? }
 *   POST   /detach                 yank a volume from this node { volumeId }
 *   POST   /volume-condition       the VOLUME_CONDITION of a volume { volumeId, abnormal, message }
 *                                  (abnormal: false and no message = healthy again)
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { CallLog } from './call-log.ts';
import { Code, errorText, isCsiError, statusName } from './csi-error.ts';
import type { CsiLoopService } from './csi-service.ts';
import { isCsiMethod, type CsiMethod } from './csi-types.ts';
import { faultSpecSchema, isInvalidFaultError, toFault, type FaultRegistry } from './faults.ts';
import type { StateStore } from './state-store.ts';
import { operationExistsMessage, type VolumeLocks } from './volume-locks.ts';

export interface ControlContext {
  service: CsiLoopService;
  store: StateStore;
  faults: FaultRegistry;
  callLog: CallLog;
  locks: VolumeLocks;
  logger: Logger;
  /** Extra fields for GET /state (endpoint, mode, registration status, …). */
  describe: () => Record<string, unknown>;
}

const MAX_BODY_BYTES = 64 * 1024;

class HttpError extends Error {
  override readonly name = 'HttpError';

  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

const volumeBodySchema = z.object({ volumeId: z.string().min(1) }).strict();
const volumeConditionSchema = z.object({ volumeId: z.string().min(1), abnormal: z.boolean(), message: z.string().max(4096).optional() }).strict();
const createVolumeSchema = z
  .object({
    volumeId: z.string().min(1),
    capacity: z.string().optional(),
    capacityBytes: z.number().int().positive().optional(),
    volumeContext: z.record(z.string(), z.string()).optional(),
  })
  .strict();

/** Starts the control server on 127.0.0.1:`port` (0 = any free port); resolves to the bound port. */
export async function startControlServer(ctx: ControlContext, port: number): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer((req, res) => {
    void handle(ctx, req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { server, port: (server.address() as AddressInfo).port };
}

async function handle(ctx: ControlContext, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  try {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const result = await route(ctx, req.method ?? 'GET', url.pathname, req);
    send(res, result.status, result.body);
  } catch (err) {
    if (err instanceof HttpError) {
      send(res, err.statusCode, { error: err.message });
    } else if (isCsiError(err)) {
      send(res, err.code === Code.NOT_FOUND ? 404 : 409, { error: err.message, code: statusName(err.code) });
    } else {
      ctx.logger.error({ err: errorText(err) }, 'control request failed');
      send(res, 500, { error: errorText(err) });
    }
  }
}

async function route(
  ctx: ControlContext,
  method: string,
  pathname: string,
  req: http.IncomingMessage,
): Promise<{ status: number; body: unknown }> {
  const faultMatch = /^\/faults\/([A-Za-z]+)$/.exec(pathname);
  switch (`${method} ${faultMatch === null ? pathname : '/faults/:method'}`) {
    case 'GET /healthz':
      return { status: 200, body: { ok: true } };
    case 'GET /state':
      return { status: 200, body: { ...ctx.describe(), ...(await ctx.store.exclusive(() => ctx.store.snapshot())) } };
    case 'GET /calls':
      return { status: 200, body: ctx.callLog.list() };
    case 'DELETE /calls':
      ctx.callLog.clear();
      return { status: 200, body: { cleared: true } };
    case 'GET /faults':
      return { status: 200, body: ctx.faults.list() };
    case 'DELETE /faults':
      ctx.faults.clear();
      return { status: 200, body: { cleared: true } };
    case 'PUT /faults/:method':
      return setFault(ctx, methodName(faultMatch?.[1] ?? ''), await readJson(req));
    case 'POST /faults': {
      const body = await readJson(req);
      const { method: name, ...spec } = z.looseObject({ method: z.string() }).parse(body);
      return setFault(ctx, methodName(name), spec);
    }
    case 'DELETE /faults/:method':
      ctx.faults.clear(methodName(faultMatch?.[1] ?? ''));
      return { status: 200, body: { cleared: true } };
    case 'POST /volumes': {
      const body = parseBody(createVolumeSchema, await readJson(req));
      const context: Record<string, string> = { ...(body.volumeContext ?? {}) };
      if (body.capacity !== undefined) context.capacity = body.capacity;
      if (body.capacityBytes !== undefined) context.capacity_bytes = String(body.capacityBytes);
      const record = await ctx.store.exclusive(() => ctx.service.ensureVolume(body.volumeId, context));
      return { status: 200, body: record };
    }
    case 'POST /detach': {
      const { volumeId } = parseBody(volumeBodySchema, await readJson(req));
      if (!ctx.locks.tryAcquire(volumeId)) {
        throw new HttpError(409, operationExistsMessage(volumeId));
      }
      try {
        const device = await ctx.store.exclusive(() => ctx.service.yank(volumeId));
        ctx.logger.warn({ volumeId, device }, 'volume yanked from this node through the control API');
        return { status: 200, body: { volumeId, detachedDevice: device } };
      } finally {
        ctx.locks.release(volumeId);
      }
    }
    case 'POST /volume-condition': {
      const { volumeId, abnormal, message } = parseBody(volumeConditionSchema, await readJson(req));
      ctx.service.setVolumeCondition(volumeId, !abnormal && message === undefined ? null : { abnormal, message: message ?? '' });
      return { status: 200, body: { volumeId, abnormal, message: message ?? '' } };
    }
    default:
      throw new HttpError(404, `no route ${method} ${pathname}`);
  }
}

function setFault(ctx: ControlContext, method: CsiMethod, body: unknown): { status: number; body: unknown } {
  const spec = parseBody(faultSpecSchema, body);
  try {
    const fault = toFault(spec);
    ctx.faults.set(method, fault);
    return { status: 200, body: { method, ...fault } };
  } catch (err) {
    if (isInvalidFaultError(err)) {
      throw new HttpError(400, err.message);
    }
    throw err;
  }
}

/** Accepts "NodeStageVolume" or a full gRPC path such as "/csi.v1.Node/NodeStageVolume". */
function methodName(name: string): CsiMethod {
  const short = name.split('/').pop() ?? '';
  if (!isCsiMethod(short)) {
    throw new HttpError(400, `unknown CSI method ${JSON.stringify(name)}`);
  }
  return short;
}

function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new HttpError(400, `invalid body: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY_BYTES) {
      throw new HttpError(413, 'body too large');
    }
    chunks.push(buf);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') {
    return {};
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, 'body is not valid JSON');
  }
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
