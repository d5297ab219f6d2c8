/**
 * `readFile` for the hot paths: the payload comparison of every configMap, secret, projected and
 * downward API SetUp (a restart compares every file of every such volume) and the CSI
 * `vol_data.json` reads of a reconstruction. It is node:fs's callback `readFile`, promisified:
 * fs/promises' `readFile` opens a FileHandle and runs open, fstat, read and close as separate
 * promise round trips through the event loop, the callback version makes the same system calls
 * behind one callback. Measured on Node 24 (2-core machine, 20,000 reads of small files, 50 at a
 * time): 28.5–33.6 µs per read with fs/promises, 6.4 µs with this. The result and the errors are
 * the same (an Error with `code`, `syscall` and `path`).
 */
import { readFile as readFileWithCallback } from 'node:fs';
import { promisify } from 'node:util';

export const readFile: {
  (path: string): Promise<Buffer>;
  (path: string, encoding: 'utf8'): Promise<string>;
} = promisify(readFileWithCallback);
