// The API token lives in sessionStorage: asked for once per browser tab, never persisted to disk.

const KEY = "sentient.token";

type Listener = () => void;
const listeners = new Set<Listener>();

export function getToken(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function setToken(token: string): void {
  sessionStorage.setItem(KEY, token);
  listeners.forEach((l) => l());
}

export function onTokenChange(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
