/** Why an address could not be listened on, for the codes an operator can fix. */
export function listenProblem(code: unknown): string | null {
  if (code === 'EADDRINUSE') return 'the address is in use by another process';
  if (code === 'EACCES') return 'the port needs more privileges';
  return null;
}
