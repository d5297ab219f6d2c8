/**
 * A short reason for a failed HTTP request, for messages that name the URL themselves: what
 * `timeout` says about the error when it names a timeout, else the socket error undici puts in
 * `cause` (`connect ECONNREFUSED 127.0.0.1:…`), else the error's own message. Pure.
 */
export function describeFetchError(err: unknown, timeout: (err: Error) => string | null): string {
  if (!(err instanceof Error)) return String(err);
  const timedOut = timeout(err);
  if (timedOut !== null) return timedOut;
  const cause: unknown = err.cause;
  if (cause instanceof Error && cause.message !== '') return cause.message;
  return err.message;
}
