// The child process behind FsProbe (fs-probe.ts): it makes the file system calls that can hang
// forever on a dead mount (statfs/stat on a hung FUSE or NFS mount, reads of /proc/<pid>/cmdline
// or /maps of a process stuck in a page fault on one), so that the agent itself never does.
// Plain JavaScript with no imports beyond node:, so it starts in tens of milliseconds without a
// TypeScript loader; every decision about the answers is made in the agent's TypeScript.
//
// Protocol: one JSON request per line on stdin, JSON answers per line on stdout, strictly in
// order (the child works on one request at a time, synchronously, so a hung call stalls every
// later answer, which is how the parent tells which request hung):
//   {"id":1,"op":"check","paths":["/a","/b"]}  -> {"id":1,"i":0,"code":null,"message":null,"s":[bsize,blocks,bfree,bavail,files,ffree]}
//                                                 per path (`s`: the statfs numbers, for the volume stats), then {"id":1,"end":true}
//   {"id":2,"op":"proc","pid":123}             -> {"id":2,"proc":{...}} (see readProc)
//   {"id":3,"op":"pids"}                       -> {"id":3,"pids":[1,2,...]}
//   {"id":4,"op":"read","path":"/proc/1/mountinfo","max":1048576} -> {"id":4,"text":"..."} or {"id":4,"code":"ENOENT","message":"..."}
// @ts-check
import { closeSync, openSync, readdirSync, readlinkSync, readSync, statfsSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** @param {unknown} value */
function send(value) {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** @param {unknown} err @returns {{ code: string, message: string }} */
function failure(err) {
  const e = /** @type {{ code?: unknown, message?: unknown }} */ (err);
  return { code: typeof e.code === 'string' ? e.code : 'UNKNOWN', message: typeof e.message === 'string' ? e.message : String(err) };
}

/** Reads at most `max` bytes of a file (proc files report size 0, so no stat first). @param {string} path @param {number} max */
function readBounded(path, max) {
  const fd = openSync(path, 'r');
  try {
    const chunks = [];
    let total = 0;
    const buf = Buffer.alloc(65536);
    while (total < max) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, max - total), null);
      if (n === 0) break;
      chunks.push(Buffer.from(buf.subarray(0, n)));
      total += n;
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** @param {string} path */
function tryReadlink(path) {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}

/** @param {string} path @param {number} max */
function tryRead(path, max) {
  try {
    return readBounded(path, max);
  } catch {
    return null;
  }
}

/**
 * What one process holds: its mount namespace, cwd, root, open files, mapped files (unique
 * paths), command line and cgroup. Links are read with readlink, which never enters the file
 * system they point into. @param {number} pid
 */
function readProc(pid) {
  const base = `/proc/${pid}`;
  /** @type {{ fd: string, target: string }[]} */
  const fds = [];
  try {
    for (const fd of readdirSync(`${base}/fd`)) {
      const target = tryReadlink(`${base}/fd/${fd}`);
      if (target !== null && target.startsWith('/')) fds.push({ fd, target });
    }
  } catch {
    // Gone, or not ours to read: the other fields say what could be read.
  }
  const maps = tryRead(`${base}/maps`, 8 * 1024 * 1024);
  const mapped = new Set();
  if (maps !== null) {
    for (const line of maps.split('\n')) {
      const at = line.indexOf('/');
      if (at >= 0) mapped.add(line.slice(at));
    }
  }
  const cmdline = tryRead(`${base}/cmdline`, 4096);
  return {
    pid,
    mntns: tryReadlink(`${base}/ns/mnt`),
    cwd: tryReadlink(`${base}/cwd`),
    root: tryReadlink(`${base}/root`),
    fds,
    maps: [...mapped],
    cmdline: cmdline === null ? null : cmdline.split('\0').filter((a) => a !== '').join(' '),
    comm: tryRead(`${base}/comm`, 256)?.trim() ?? null,
    cgroup: tryRead(`${base}/cgroup`, 16384),
  };
}

/** @param {{ id: number, op: string, paths?: string[], pid?: number, path?: string, max?: number }} req */
function handle(req) {
  switch (req.op) {
    case 'check':
      (req.paths ?? []).forEach((path, i) => {
        try {
          // statfs always reaches the file system's server (no kernel cache answers it); stat
          // then walks the path itself (ESTALE shows here on NFS).
          const s = statfsSync(path);
          statSync(path);
          send({ id: req.id, i, code: null, message: null, s: [s.bsize, s.blocks, s.bfree, s.bavail, s.files, s.ffree] });
        } catch (err) {
          send({ id: req.id, i, ...failure(err) });
        }
      });
      send({ id: req.id, end: true });
      return;
    case 'proc':
      send({ id: req.id, proc: readProc(req.pid ?? 0) });
      return;
    case 'pids':
      send({ id: req.id, pids: readdirSync('/proc').filter((n) => /^\d+$/.test(n)).map(Number) });
      return;
    case 'read':
      try {
        send({ id: req.id, text: readBounded(req.path ?? '', req.max ?? 1048576) });
      } catch (err) {
        send({ id: req.id, ...failure(err) });
      }
      return;
    default:
      send({ id: req.id, code: 'EINVAL', message: `unknown op ${req.op}` });
  }
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim() === '') return;
  handle(JSON.parse(line));
});
lines.on('close', () => {
  process.exit(0);
});
