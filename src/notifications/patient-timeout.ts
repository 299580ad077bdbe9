/**
 * A timeout on this process's own time: it fires once `ms` have passed in steps the event
 * loop actually ran, a stretch where it could not run (the CPU given to others, a long GC)
 * counting as one short step. So a starved process does not blame the receiver for its
 * own delay; the wall time stays bounded while the process gets CPU. When it fires, it
 * waits one more turn of the loop first, so an answer that already arrived is read before
 * the request is given up. Returns the cancel.
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
  let immediate: NodeJS.Immediate | null = null;
  const tick = (): void => {
    const at = now();
    counted += Math.min(Math.max(0, at - last), 2 * step);
    last = at;
    if (counted >= ms) {
      immediate = setImmediate(onTimeout);
      return;
    }
    timer = setTimeout(tick, Math.min(step, ms - counted));
  };
  timer = setTimeout(tick, Math.min(step, ms));
  return () => {
    if (timer !== null) clearTimeout(timer);
    if (immediate !== null) clearImmediate(immediate);
  };
}
