// The dashboard's one store. Node updates go through applyNodeUpdate into a Map, so a node
// component that selects `nodes.get(id)` re-renders only when its own node changed.

import { create } from "zustand";
import type { Profile, Project, Review, SnapshotEvent, TaskNode } from "../api/types";
import { applyNodeUpdate, emptyGraph, graphFromSnapshot, type GraphState } from "./graphState";

export type Connection = "connecting" | "connected" | "reconnecting" | "disconnected";
export type View = "graph" | "report";

export interface Notice {
  id: number;
  kind: "error" | "info";
  text: string;
}

export interface DashboardState {
  connection: Connection;
  needToken: boolean;
  projects: Project[];
  profiles: Profile[];
  currentId: string | null;
  project: Project | null;
  graph: GraphState;
  reviews: Review[];
  reviewOpen: string | null;
  selected: string | null;
  collapsed: ReadonlySet<string>;
  view: View;
  notices: Notice[];
}

export interface DashboardActions {
  setConnection(connection: Connection): void;
  askToken(): void;
  tokenGiven(): void;
  setProjects(projects: Project[]): void;
  setProfiles(profiles: Profile[]): void;
  open(projectId: string | null): void;
  snapshot(event: SnapshotEvent): void;
  nodeUpdate(projectId: string, nodes: TaskNode[], removed: string[]): void;
  projectChanged(project: Project): void;
  projectRemoved(projectId: string): void;
  reviewRequested(review: Review): void;
  reviewResolved(reviewId: string): void;
  openReview(reviewId: string | null): void;
  select(nodeId: string | null): void;
  toggleCollapsed(nodeId: string): void;
  setView(view: View): void;
  notify(kind: Notice["kind"], text: string): void;
  dismiss(id: number): void;
}

export type Store = DashboardState & DashboardActions;

let noticeId = 0;

function upsertProject(projects: Project[], project: Project): Project[] {
  const at = projects.findIndex((p) => p.project_id === project.project_id);
  if (at < 0) return [project, ...projects];
  const next = projects.slice();
  next[at] = project;
  return next;
}

export const useStore = create<Store>()((set, get) => ({
  connection: "connecting",
  needToken: false,
  projects: [],
  profiles: [],
  currentId: null,
  project: null,
  graph: emptyGraph,
  reviews: [],
  reviewOpen: null,
  selected: null,
  collapsed: new Set(),
  view: "graph",
  notices: [],

  setConnection: (connection) => set({ connection }),
  askToken: () => set({ needToken: true }),
  tokenGiven: () => set({ needToken: false }),
  setProjects: (projects) => {
    const current = get().currentId;
    const project = projects.find((p) => p.project_id === current);
    set(project ? { projects, project } : { projects });
  },
  setProfiles: (profiles) => set({ profiles }),
  open: (projectId) =>
    set((s) => ({
      currentId: projectId,
      project: s.projects.find((p) => p.project_id === projectId) ?? null,
      graph: emptyGraph,
      reviews: [],
      reviewOpen: null,
      selected: null,
      collapsed: new Set(),
      view: "graph",
    })),
  snapshot: ({ project, graph, reviews }) =>
    set((s) => {
      if (project.project_id !== s.currentId) return {};
      const pending = reviews.filter((r) => r.status === "pending");
      const stillOpen = pending.some((r) => r.review_id === s.reviewOpen);
      return {
        project,
        projects: upsertProject(s.projects, project),
        graph: graphFromSnapshot(project.project_id, graph.nodes, graph.root, s.graph),
        reviews: pending,
        reviewOpen: stillOpen ? s.reviewOpen : (pending[0]?.review_id ?? null),
      };
    }),
  nodeUpdate: (projectId, nodes, removed) =>
    set((s) => (projectId === s.currentId ? { graph: applyNodeUpdate(s.graph, nodes, removed) } : {})),
  projectChanged: (project) =>
    set((s) => ({
      projects: upsertProject(s.projects, project),
      ...(project.project_id === s.currentId ? { project } : {}),
    })),
  projectRemoved: (projectId) =>
    set((s) => ({
      projects: s.projects.filter((p) => p.project_id !== projectId),
      ...(projectId === s.currentId
        ? { currentId: null, project: null, graph: emptyGraph, reviews: [], selected: null, reviewOpen: null }
        : {}),
    })),
  reviewRequested: (review) =>
    set((s) => {
      if (review.project_id !== s.currentId) return {};
      const reviews = [...s.reviews.filter((r) => r.review_id !== review.review_id), review];
      return { reviews, reviewOpen: s.reviewOpen ?? review.review_id };
    }),
  reviewResolved: (reviewId) =>
    set((s) => {
      const reviews = s.reviews.filter((r) => r.review_id !== reviewId);
      const reviewOpen = s.reviewOpen === reviewId ? null : s.reviewOpen;
      return { reviews, reviewOpen };
    }),
  openReview: (reviewOpen) => set({ reviewOpen }),
  select: (selected) => set({ selected }),
  toggleCollapsed: (nodeId) =>
    set((s) => {
      const collapsed = new Set(s.collapsed);
      if (!collapsed.delete(nodeId)) collapsed.add(nodeId);
      return { collapsed };
    }),
  setView: (view) => set({ view }),
  notify: (kind, text) => {
    const id = ++noticeId;
    set((s) => ({ notices: [...s.notices.slice(-3), { id, kind, text }] }));
    setTimeout(() => get().dismiss(id), kind === "error" ? 8000 : 4000);
  },
  dismiss: (id) => set((s) => ({ notices: s.notices.filter((n) => n.id !== id) })),
}));
