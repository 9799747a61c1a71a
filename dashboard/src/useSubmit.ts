// The state of a form that sends one request at a time: busy while it is in flight, and the error
// of the last one that failed (as its text), cleared when the next one starts.

import { useCallback, useState } from "react";
import { errorText } from "./format";

export interface SubmitTarget {
  busy: (busy: boolean) => void;
  error: (error: string | null) => void;
}

/** Run ``action`` as one submission: busy during it, its error (if it throws) kept as text. */
export async function submit(action: () => Promise<unknown>, target: SubmitTarget): Promise<void> {
  target.busy(true);
  target.error(null);
  try {
    await action();
  } catch (err) {
    target.error(errorText(err));
  } finally {
    target.busy(false);
  }
}

/** ``run(action)`` submits; ``fail(err)`` shows an error from elsewhere (a reload), ``clear()`` forgets it. */
export function useSubmit() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = useCallback((action: () => Promise<unknown>) => submit(action, { busy: setBusy, error: setError }), []);
  const fail = useCallback((err: unknown) => setError(errorText(err)), []);
  const clear = useCallback(() => setError(null), []);
  return { busy, error, run, fail, clear };
}
