// The Socket.IO link: one connection, joined to the open project's room. After any
// (re)connect it joins again and the server answers with a snapshot, so the view catches up.

import { io, type Socket } from "socket.io-client";
import { useStore } from "../state/store";
import { stripBidi } from "./bidi";
import { getToken } from "./token";
import type {
  ErrorEvent,
  HitlRequestEvent,
  HitlResolvedEvent,
  NodeUpdateEvent,
  ProjectEvent,
  SnapshotEvent,
} from "./types";

interface ServerEvents {
  project_snapshot: (e: SnapshotEvent) => void;
  node_update: (e: NodeUpdateEvent) => void;
  project_status: (e: ProjectEvent) => void;
  project_completed: (e: ProjectEvent) => void;
  hitl_request: (e: HitlRequestEvent) => void;
  hitl_resolved: (e: HitlResolvedEvent) => void;
  error: (e: ErrorEvent) => void;
}

interface ClientEvents {
  join_project: (e: { project_id: string }) => void;
  leave_project: (e: { project_id: string }) => void;
}

let socket: Socket<ServerEvents, ClientEvents> | null = null;
let joined: string | null = null;

/** The token for the engine.io handshake: the server checks it before it opens a session. */
function handshakeQuery(): Record<string, string> {
  const token = getToken();
  return token ? { token } : {};
}

function looksUnauthorized(message: string): boolean {
  return /unauthori[sz]ed|token|401|forbidden/i.test(message);
}

export function connectSocket(onProjectDone: (projectId: string) => void): void {
  if (socket) return;
  const store = useStore.getState;
  socket = io({
    path: "/socket.io",
    auth: (cb) => cb({ token: getToken() ?? "" }),
    query: handshakeQuery(),
    reconnectionDelay: 500,
    reconnectionDelayMax: 4000,
  });
  socket.on("connect", () => {
    store().setConnection("connected");
    joined = null;
    const current = store().currentId;
    if (current) joinProject(current);
  });
  socket.on("disconnect", (reason) => {
    store().setConnection("reconnecting");
    if (reason === "io server disconnect") socket?.connect();
  });
  socket.io.on("reconnect_attempt", () => {
    if (socket) socket.io.opts.query = handshakeQuery();
    store().setConnection("reconnecting");
  });
  socket.on("connect_error", (err) => {
    if (looksUnauthorized(err.message)) store().askToken();
    store().setConnection(socket?.active ? "reconnecting" : "disconnected");
  });
  socket.on("project_snapshot", (e) => store().snapshot(stripBidi(e)));
  socket.on("node_update", (e) => {
    const clean = stripBidi(e);
    store().nodeUpdate(clean.project_id, clean.nodes, clean.removed ?? []);
  });
  socket.on("project_status", (e) => store().projectChanged(stripBidi(e.project)));
  socket.on("project_completed", (e) => {
    store().projectChanged(stripBidi(e.project));
    onProjectDone(e.project.project_id);
  });
  socket.on("hitl_request", (e) => store().reviewRequested(stripBidi({ ...e.review, project_id: e.project_id })));
  socket.on("hitl_resolved", (e) => store().reviewResolved(e.review_id));
  socket.on("error", (e) => {
    if (e.code === "unauthorized") store().askToken();
    store().notify("error", stripBidi(e.message));
  });
}

/** Reconnect with the current token (after the user gave one). */
export function reconnectSocket(): void {
  if (!socket) return;
  socket.io.opts.query = handshakeQuery();
  socket.disconnect();
  socket.connect();
}

export function joinProject(projectId: string | null): void {
  if (!socket?.connected) return; // the connect handler joins the current project
  if (joined && joined !== projectId) socket.emit("leave_project", { project_id: joined });
  joined = projectId;
  if (projectId) socket.emit("join_project", { project_id: projectId });
}
