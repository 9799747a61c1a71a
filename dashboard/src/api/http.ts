// A small fetch wrapper: JSON in and out, the bearer token, and the contract's error shape.

import { stripBidi } from "./bidi";
import { getToken } from "./token";
import type {
  Followup,
  Graph,
  NodeDetail,
  Profile,
  Project,
  ReportResponse,
  Review,
  ReviewAnswer,
} from "./types";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

type UnauthorizedHandler = () => void;
let onUnauthorized: UnauthorizedHandler = () => {};

/** Called on every 401, so the app can ask for a token. */
export function setUnauthorizedHandler(handler: UnauthorizedHandler): void {
  onUnauthorized = handler;
}

function headers(extra?: Record<string, string>): Record<string, string> {
  const h: Record<string, string> = { Accept: "application/json", ...extra };
  const token = getToken();
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

async function failure(res: Response): Promise<ApiError> {
  let code = `http_${res.status}`;
  let message = res.statusText || `HTTP ${res.status}`;
  try {
    const body: unknown = await res.json();
    if (body && typeof body === "object" && "error" in body) {
      const err = (body as { error: { code?: string; message?: string } }).error;
      code = err.code ?? code;
      message = err.message ?? message;
    }
  } catch {
    // not JSON: keep the status text
  }
  if (res.status === 401) onUnauthorized();
  return new ApiError(res.status, code, message);
}

export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: headers(body === undefined ? undefined : { "Content-Type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw await failure(res);
  return stripBidi((await res.json()) as T);
}

/** Fetch a file with the token (plain links cannot carry an Authorization header). */
export async function requestBlob(path: string): Promise<Blob> {
  const res = await fetch(path, { headers: headers({ Accept: "*/*" }) });
  if (!res.ok) throw await failure(res);
  return res.blob();
}

const enc = encodeURIComponent;

export interface NewProject {
  goal: string;
  profile?: string;
  config?: Record<string, unknown>;
}

/** The report's download formats (`GET /api/projects/{id}/report?format=…`). */
export type ReportFormat = "md" | "html" | "json" | "pdf" | "docx";

export const api = {
  health: () => request<{ status: string; version: string }>("GET", "/api/health"),
  profiles: () => request<{ profiles: Profile[] }>("GET", "/api/profiles"),
  projects: () => request<{ projects: Project[] }>("GET", "/api/projects"),
  project: (id: string) => request<Project>("GET", `/api/projects/${enc(id)}`),
  create: (body: NewProject) => request<Project>("POST", "/api/projects", body),
  execute: (id: string) => request<Project>("POST", `/api/projects/${enc(id)}/execute`, {}),
  cancel: (id: string) => request<Project>("POST", `/api/projects/${enc(id)}/cancel`, {}),
  resume: (id: string) => request<Project>("POST", `/api/projects/${enc(id)}/resume`, {}),
  rerun: (id: string, nodeId: string, body: { replan: boolean; instructions: string | null }) =>
    request<Project>("POST", `/api/projects/${enc(id)}/nodes/${enc(nodeId)}/rerun`, body),
  followups: (id: string) => request<{ followups: Followup[] }>("GET", `/api/projects/${enc(id)}/followups`),
  ask: (id: string, question: string) => request<Project>("POST", `/api/projects/${enc(id)}/followups`, { question }),
  remove: (id: string) => request<{ deleted: string }>("DELETE", `/api/projects/${enc(id)}`),
  graph: (id: string) => request<Graph & { project_id: string }>("GET", `/api/projects/${enc(id)}/graph`),
  node: (id: string, nodeId: string) =>
    request<NodeDetail>("GET", `/api/projects/${enc(id)}/nodes/${enc(nodeId)}`),
  reviews: (id: string) => request<{ reviews: Review[] }>("GET", `/api/projects/${enc(id)}/reviews`),
  answer: (reviewId: string, answer: ReviewAnswer) =>
    request<Review>("POST", `/api/reviews/${enc(reviewId)}`, answer),
  reportJson: (id: string) => request<ReportResponse>("GET", `/api/projects/${enc(id)}/report?format=json`),
  reportFile: (id: string, format: ReportFormat) =>
    requestBlob(`/api/projects/${enc(id)}/report?format=${format}`),
};
