// Shapes of the server contract (docs/server-protocol.md). Keep in step with server/.

import type { ReportResponse } from "./report.generated";

export type TaskStatus =
  | "PENDING"
  | "READY"
  | "PLANNING"
  | "PLAN_MODIFICATION"
  | "ATOMIZATION"
  | "PLAN_DONE"
  | "EXECUTING"
  | "AGGREGATING"
  | "DONE"
  | "FAILED"
  | "CANCELLED"
  | "NEEDS_REPLAN";

export const TERMINAL: ReadonlySet<string> = new Set(["DONE", "FAILED", "CANCELLED"]);

export type TaskType = "SEARCH" | "THINK" | "WRITE";
export const TASK_TYPES: readonly TaskType[] = ["SEARCH", "THINK", "WRITE"];

export interface Source {
  ref: string;
  title: string;
  snippet?: string;
}

export interface HistoryEntry {
  status: string;
  at: number;
}

export interface TaskNode {
  task_id: string;
  parent_id: string | null;
  goal: string;
  task_type: string;
  node_type: string;
  layer: number;
  status: string;
  depends_on: string[];
  children: string[];
  result: string | null;
  error: string | null;
  sources: Source[];
  agent_calls: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  history: HistoryEntry[];
  warnings: string[];
}

export type ProjectStatus =
  | "created"
  | "running"
  | "completed"
  | "failed"
  | "cancelled"
  | "stopped"
  | "interrupted";

export interface ProjectStats {
  nodes: number;
  agent_calls: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  failed_nodes: number;
  elapsed_s: number;
}

export interface Project {
  project_id: string;
  goal: string;
  profile: string;
  status: ProjectStatus | string;
  created_at: number;
  updated_at: number;
  error: string | null;
  settings: Record<string, unknown>;
  stats: Partial<ProjectStats>;
  pending_reviews: number;
}

/** A follow-up question (`GET /api/projects/{id}/followups`): the project that researches it (its
 * goal is the question) and its answer once it has one. */
export interface Followup {
  project: Project;
  answer: ReportResponse | null;
}

export interface PlanSubtask {
  goal: string;
  task_type: string;
  depends_on_indices: number[];
}

export interface Plan {
  subtasks: PlanSubtask[];
}

/** A call of a tool marked `confirm: true`, waiting for approval. */
export interface ReviewedCall {
  tool: string;
  arguments: Record<string, unknown>;
}

/** A review: of a proposed plan (kind "plan"), or of a tool call (kind "tool_call", approved or refused). */
export interface Review {
  review_id: string;
  project_id: string;
  task_id: string;
  goal: string;
  layer: number;
  round: number;
  kind: "plan" | "tool_call";
  plan: Plan | null;
  tool_call: ReviewedCall | null;
  context: string;
  created_at: number;
  deadline: number | null;
  status: "pending" | "answered" | string;
}

export interface AgentCall {
  role: string;
  agent: string;
  model: string;
  prompt: string;
  /** What the call was given: a string, or the server's structured summary (sections, sources, tokens, cut). */
  context: unknown;
  response: string | null;
  error: string | null;
  attempts: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  cached: boolean;
  started_at: number;
  latency_s: number;
}

export interface NodeDetail {
  node: TaskNode;
  calls: AgentCall[];
  reviews: Review[];
}

export interface Graph {
  nodes: Record<string, TaskNode>;
  root: string;
}

export interface Profile {
  name: string;
  description: string;
  settings?: Record<string, unknown>;
}

// The report's JSON is generated from the server's response model (python -m server.wire_types).
export type { Consulted, Missing, Reference, ReportResponse, Section, StructuredAnswer } from "./report.generated";

// Socket.IO payloads, server -> client.
export interface SnapshotEvent {
  project: Project;
  graph: Graph;
  reviews: Review[];
}
export interface NodeUpdateEvent {
  project_id: string;
  nodes: TaskNode[];
  removed?: string[];
}
export interface ProjectEvent {
  project: Project;
}
export interface HitlRequestEvent {
  project_id: string;
  review: Review;
}
export interface HitlResolvedEvent {
  project_id: string;
  review_id: string;
  action: string;
}
export interface ErrorEvent {
  code: string;
  message: string;
}

export type ReviewAnswer =
  | { action: "approve" }
  | { action: "modify"; instructions: string }
  | { action: "modify"; plan: Plan }
  | { action: "reject"; reason: string };
