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
