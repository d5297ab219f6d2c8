/**
 * Reading a process's CPU times from procfs (proc(5)), for the benchmarks that measure processes
 * they started.
 */
import { execFileSync } from 'node:child_process';

/** The kernel's clock ticks per second (the unit of the times in /proc/<pid>/stat). */
export function clockTicks(): number {
  return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
}

/**
 * The fields of a /proc/<pid>/stat line after the parenthesised command name (which may itself
 * hold spaces and parentheses): index 1 is the parent pid, 11 and 12 utime and stime, 13 and 14
 * the waited-for children's cutime and cstime, all in {@link clockTicks}.
 */
export function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}
