/**
 * Reading a process's CPU times from procfs (proc(5)), for the benchmarks that measure processes
 * they started.
 */
import { execFileSync } from 'node:child_process';

/** The kernel's clock ticks per second (the unit of the times in /proc/<pid>/stat). */
export function clockTicks(): number {
  return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
}

/** What the benchmarks read of a /proc/<pid>/stat line; times in {@link clockTicks}. */
export interface ProcStat {
  readonly ppid: number;
  /** utime + stime: the process's own CPU time, every thread. */
  readonly cpuTicks: number;
  /** cutime + cstime: the CPU time of the children it waited for. */
  readonly reapedChildrenCpuTicks: number;
}

/**
 * Parses a /proc/<pid>/stat line. The fields are counted after the parenthesised command name,
 * which may itself hold spaces and parentheses: there, index 1 is the parent pid, 11 and 12 utime
 * and stime, 13 and 14 cutime and cstime.
 */
export function parseProcStat(stat: string): ProcStat {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    ppid: Number(fields[1]),
    cpuTicks: Number(fields[11]) + Number(fields[12]),
    reapedChildrenCpuTicks: Number(fields[13]) + Number(fields[14]),
  };
}
