// Small display helpers.

export function age(unixSeconds: number, now = Date.now() / 1000): string {
  const s = Math.max(0, now - unixSeconds);
  if (s < 60) return `${Math.floor(s)}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

export function cost(usd: number | undefined): string {
  const v = usd ?? 0;
  return v === 0 ? "$0" : v < 0.01 ? `$${v.toFixed(4)}` : `$${v.toFixed(2)}`;
}

export function count(n: number | undefined): string {
  return (n ?? 0).toLocaleString("en-US");
}

/** "1 node", "2 nodes", "1,024 calls": a count with its noun, singular only for exactly one. */
export function counted(n: number | undefined, noun: string, nouns = `${noun}s`): string {
  const v = n ?? 0;
  return `${count(v)} ${v === 1 ? noun : nouns}`;
}

/** A run's length: "350 ms", "12.3 s", "4 min 05 s", "2 h 03 min". */
export function duration(s: number | undefined): string {
  const v = Math.max(0, s ?? 0);
  if (v < 60) return seconds(v);
  const whole = Math.floor(v);
  if (whole < 3600) return `${Math.floor(whole / 60)} min ${String(whole % 60).padStart(2, "0")} s`;
  return `${Math.floor(whole / 3600)} h ${String(Math.floor((whole % 3600) / 60)).padStart(2, "0")} min`;
}

export function seconds(s: number | undefined): string {
  const v = s ?? 0;
  return v < 1 ? `${Math.round(v * 1000)} ms` : `${v.toFixed(1)} s`;
}

export function clock(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toLocaleTimeString("en-GB", { hour12: false });
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
