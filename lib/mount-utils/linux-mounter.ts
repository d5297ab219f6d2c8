/**
 * The real mounter (`mount.Mounter` of k8s mount-utils on Linux): mount(8) and umount(8) run
 * through execFile with argument arrays (no shell, so paths with spaces or `$` are safe), and
 * mount points come from mountinfo read for every call (concurrent calls share a read that began
 * after each of them: MountInfoFile).
 */
import { realpath, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { execFileNoShell } from './exec.ts';
import type { ExecFn } from './exec.ts';
import { MountError } from './mount-error.ts';
import { isCorruptedMnt, isNotExist, mountsAt, searchMountRefs } from './mount-table.ts';
import type { Mounter } from './mounter.ts';
import { MountInfoFile, PROC_SELF_MOUNTINFO } from './mountinfo.ts';
import type { MountInfo } from './mountinfo.ts';

export interface LinuxMounterOptions {
  /** Program for mounting; default `mount` (found through PATH). */
  mountCommand?: string;
  /** Program for unmounting; default `umount`. */
  umountCommand?: string;
  /** Mount table to consult; default `/proc/self/mountinfo`. */
  mountInfoPath?: string;
  /** Program runner; default execFile without a shell. Tests inject a fake to check arguments and errors. */
  exec?: ExecFn;
}

/**
 * Arguments for mount(8) (`MakeMountArgs`): `[-t fstype] [-o opt,...] -- source target`. The
 * `--` keeps a source that starts with `-` from being read as an option.
 */
export function makeMountArgs(source: string, target: string, fstype: string, options: readonly string[]): string[] {
  const args: string[] = [];
  if (fstype !== '') args.push('-t', fstype);
  if (options.length > 0) args.push('-o', options.join(','));
  args.push('--', source, target);
  return args;
}

/**
 * `MakeBindOpts`: a bind mount with more options (e.g. `ro`) is done in two steps, because the
 * kernel ignores most options on the initial bind: first `bind` alone, then
 * `bind,remount,<options>`. Returns null when a single mount suffices.
 */
export function makeBindOpts(options: readonly string[]): { bind: string[]; remount: string[] } | null {
  if (!options.includes('bind')) return null;
  const rest = options.filter((o) => o !== 'bind' && o !== 'remount');
  if (rest.length === 0) return null;
  return { bind: ['bind'], remount: ['bind', 'remount', ...rest] };
}

export class LinuxMounter implements Mounter {
  readonly kind = 'linux' as const;
  readonly privileged = true;
  private readonly mountCommand: string;
  private readonly umountCommand: string;
  private readonly mountInfo: MountInfoFile;
  private readonly exec: ExecFn;

  constructor(opts: LinuxMounterOptions = {}) {
    this.mountCommand = opts.mountCommand ?? 'mount';
    this.umountCommand = opts.umountCommand ?? 'umount';
    this.mountInfo = new MountInfoFile(opts.mountInfoPath ?? PROC_SELF_MOUNTINFO);
    this.exec = opts.exec ?? execFileNoShell;
  }

  async mount(source: string, target: string, fstype: string, options: readonly string[]): Promise<void> {
    const twoStep = makeBindOpts(options);
    if (twoStep === null) {
      await this.doMount(source, target, fstype, options);
      return;
    }
    await this.doMount(source, target, fstype, twoStep.bind);
    try {
      await this.doMount(source, target, fstype, twoStep.remount);
    } catch (err) {
      // Do not leave a bind mount without the requested options (say, writable instead of ro).
      await this.unmount(target).catch(() => undefined);
      throw err;
    }
  }

  private async doMount(source: string, target: string, fstype: string, options: readonly string[]): Promise<void> {
    const args = makeMountArgs(source, target, fstype, options);
    const r = await this.exec(this.mountCommand, args);
    if (r.exitCode !== 0) throw MountError.fromExec('mount', this.mountCommand, args, r);
  }

  async unmount(target: string): Promise<void> {
    const args = ['--', target];
    const r = await this.exec(this.umountCommand, args);
    if (r.exitCode !== 0) throw MountError.fromExec('unmount', this.umountCommand, args, r);
  }

  list(): Promise<MountInfo[]> {
    return this.mountInfo.read();
  }

  async isLikelyNotMountPoint(path: string): Promise<boolean> {
    const st = await stat(path);
    const parent = await stat(dirname(path.length > 1 ? path.replace(/\/+$/, '') : path));
    return st.dev === parent.dev;
  }

  async isMountPoint(path: string): Promise<boolean> {
    const resolved = await realpath(path);
    return mountsAt(await this.list(), resolved).length > 0;
  }

  async getMountRefs(path: string): Promise<string[]> {
    let resolved: string;
    try {
      resolved = await realpath(path);
    } catch (err) {
      if (isNotExist(err) || isCorruptedMnt(err)) return [];
      throw new Error(`error checking path ${path}: ${(err as Error).message}`, { cause: err });
    }
    return searchMountRefs(await this.list(), resolved);
  }
}
