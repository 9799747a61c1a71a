import { useCallback, useEffect, useState } from "react";
import { api, setUnauthorizedHandler } from "./api/http";
import { connectSocket, joinProject, reconnectSocket } from "./api/socket";
import type { Project } from "./api/types";
import { ErrorBoundary } from "./components/ErrorBoundary";
import { Inspector } from "./components/Inspector";
import { GraphToolbar } from "./components/GraphToolbar";
import { NewProjectDialog } from "./components/NewProjectDialog";
import { Notices } from "./components/Notices";
import { ReportView } from "./components/ReportView";
import { ReviewDialog } from "./components/ReviewDialog";
import { Sidebar } from "./components/Sidebar";
import { TokenPrompt } from "./components/TokenPrompt";
import { TopBar } from "./components/TopBar";
import { errorText } from "./format";
import { TaskGraph } from "./graph/TaskGraph";
import { useStore } from "./state/store";

const POLL_MS = 3000;

function projectFromUrl(): string | null {
  return new URLSearchParams(window.location.search).get("project");
}

async function refreshProjects(): Promise<void> {
  const { projects } = await api.projects();
  useStore.getState().setProjects(projects);
}

/** REST catch-up, used while the socket is not connected (the socket's snapshot wins later). */
async function loadProject(projectId: string): Promise<void> {
  const [graph, reviews, project] = await Promise.all([
    api.graph(projectId),
    api.reviews(projectId),
    api.project(projectId),
  ]);
  useStore.getState().snapshot({ project, graph, reviews: reviews.reviews });
}

export function App() {
  const currentId = useStore((s) => s.currentId);
  const view = useStore((s) => s.view);
  const selected = useStore((s) => s.selected);
  const needToken = useStore((s) => s.needToken);
  const connection = useStore((s) => s.connection);
  const [creating, setCreating] = useState(false);

  const open = useCallback((projectId: string | null) => {
    const store = useStore.getState();
    if (store.currentId === projectId) return;
    store.open(projectId);
    const url = new URL(window.location.href);
    if (projectId) url.searchParams.set("project", projectId);
    else url.searchParams.delete("project");
    window.history.replaceState(null, "", url);
    joinProject(projectId);
    if (projectId && store.connection !== "connected") {
      loadProject(projectId).catch((err: unknown) => store.notify("error", errorText(err)));
    }
  }, []);

  useEffect(() => {
    setUnauthorizedHandler(() => useStore.getState().askToken());
    connectSocket(() => void refreshProjects().catch(() => {}));
    api
      .profiles()
      .then((p) => useStore.getState().setProfiles(p.profiles))
      .catch(() => {});
    const initial = projectFromUrl();
    if (initial) open(initial);
  }, [open]);

  // The project list (statuses, costs, pending reviews of every project) is polled; the open
  // project itself is live over Socket.IO.
  useEffect(() => {
    if (needToken) return;
    const tick = () => void refreshProjects().catch(() => {});
    tick();
    const timer = setInterval(tick, POLL_MS);
    return () => clearInterval(timer);
  }, [needToken, connection]);

  const tokenGiven = () => {
    useStore.getState().tokenGiven();
    reconnectSocket();
    void api
      .profiles()
      .then((p) => useStore.getState().setProfiles(p.profiles))
      .catch(() => {});
    const id = useStore.getState().currentId;
    if (id) loadProject(id).catch(() => {});
  };

  const created = (project: Project) => {
    setCreating(false);
    useStore.getState().projectChanged(project);
    open(project.project_id);
  };

  return (
    <div className="app">
      <Sidebar onNew={() => setCreating(true)} onOpen={open} />
      <div className="main">
        <TopBar onDeleted={() => { const id = useStore.getState().currentId; if (id) useStore.getState().projectRemoved(id); open(null); }} />
        {currentId ? (
          <div className="workspace">
            <div className="canvas">
              {view === "graph" ? (
                <ErrorBoundary label="graph" resetKey={currentId}>
                  <GraphToolbar />
                  <TaskGraph />
                </ErrorBoundary>
              ) : (
                <ErrorBoundary label="report" resetKey={currentId}>
                  <ReportView />
                </ErrorBoundary>
              )}
            </div>
            {view === "graph" && (
              <ErrorBoundary label="node inspector" resetKey={selected}>
                <Inspector />
              </ErrorBoundary>
            )}
          </div>
        ) : (
          <div className="empty-state">
            <h2>Research, as a tree of tasks</h2>
            <p className="muted">
              Start a project with a goal. Planners break it into subtasks, executors work on the leaves in parallel,
              and aggregators combine the results into a cited report — live, here.
            </p>
            <button type="button" className="primary" onClick={() => setCreating(true)}>
              + New project
            </button>
          </div>
        )}
      </div>
      {creating && <NewProjectDialog onClose={() => setCreating(false)} onCreated={created} />}
      <ErrorBoundary label="plan review" resetKey={currentId}>
        <ReviewDialog />
      </ErrorBoundary>
      {needToken && <TokenPrompt onDone={tokenGiven} />}
      <Notices />
    </div>
  );
}
