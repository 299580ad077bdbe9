import { cpus, totalmem } from 'node:os';
import { readFileSync } from 'node:fs';

/** "AMD EPYC, 2 cores, 8 GB, Node v22" — printed above the figures. */
export function describeMachine(postgresVersion: string): string {
  const cores = cpus();
  const model = cores[0]?.model.trim() || 'unknown CPU';
  const gb = Math.round(totalmem() / 2 ** 30);
  return `${model}, ${cores.length} cores, ${gb} GB RAM, Node ${process.version}, ${postgresVersion}`;
}

/** Clock ticks per second of /proc/<pid>/stat; 100 on every Linux we run on. */
const CLK_TCK = 100;

/** CPU seconds (user + system) a process has used, or 0 if it is gone or unreadable. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}
