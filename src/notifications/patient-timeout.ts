/**
 * A timeout on this process's own time: it fires once `ms` have passed in steps the event
 * loop actually ran, a stretch where it could not run (the CPU given to others, a long GC)
 * counting as one short step. So a starved process does not blame the other end for its
 * own delay; the wall time stays bounded while the process gets CPU. When it fires, it
 * waits for the loop's next poll first (see `afterPoll`). Returns the cancel.
 */
export function patientTimeout(
  ms: number,
  onTimeout: () => void,
  now: () => number = Date.now,
): () => void {
  const step = Math.max(1, Math.min(ms, 250));
  let counted = 0;
  let last = now();
  let timer: NodeJS.Timeout | null = null;
  let cancelLast: (() => void) | null = null;
  const tick = (): void => {
    const at = now();
    counted += Math.min(Math.max(0, at - last), 2 * step);
    last = at;
    if (counted >= ms) {
      cancelLast = afterPoll(onTimeout);
      return;
    }
    timer = setTimeout(tick, Math.min(step, ms - counted));
  };
  timer = setTimeout(tick, Math.min(step, ms));
  return () => {
    if (timer !== null) clearTimeout(timer);
    cancelLast?.();
  };
}

/**
 * A timeout on the wall clock: `ms` really passed, however little of it this process ran.
 * It fires after the loop's next poll, like `patientTimeout`. Returns the cancel.
 */
export function wallTimeout(ms: number, onTimeout: () => void): () => void {
  let cancelLast: (() => void) | null = null;
  const timer = setTimeout(() => (cancelLast = afterPoll(onTimeout)), ms);
  return () => {
    clearTimeout(timer);
    cancelLast?.();
  };
}

/**
 * Runs `fn` in the check phase of this turn of the event loop (a timer's callback runs
 * before the poll): the poll in between reads every socket that has data, so whatever
 * answer arrived while the process was waiting for the CPU is read before `fn` decides
 * there is none. The caller's `fn` must look at what was read (node:http emits a
 * response in the very callback that reads its head). Returns the cancel.
 */
function afterPoll(fn: () => void): () => void {
  const immediate = setImmediate(fn);
  return () => clearImmediate(immediate);
}
