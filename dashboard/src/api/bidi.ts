// Bidirectional control characters (LRM, RLM, embeddings, overrides, isolates) let text display
// in another order than it is stored ("Trojan Source" spoofing of names and links). Every payload
// from the server passes through here before it reaches the store, so no view renders them.

const BIDI = /[\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `value` with the bidi controls removed from every string in it (objects and arrays walked). */
export function stripBidi<T>(value: T): T {
  if (typeof value === "string") return value.replace(BIDI, "") as T;
  if (Array.isArray(value)) return value.map((item) => stripBidi(item)) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      out[stripBidi(key)] = stripBidi(item);
    }
    return out as T;
  }
  return value;
}
