// The live task graph. Layout is recomputed only when the tree's shape (or the set of
// collapsed subtrees) changes; status changes re-render just the affected node components.

import {
  Background,
  ControlButton,
  Controls,
  MarkerType,
  Position,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  useStore as useFlowStore,
  useStoreApi,
  type Edge,
  type NodeMouseHandler,
  type ReactFlowState,
  type Viewport,
} from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState, type MouseEvent } from "react";
import { useStore } from "../state/store";
import { DEP_IN_Y, DEP_OUT_Y, layoutTree, NODE_HEIGHT, NODE_WIDTH } from "./layout";
import { DependencyEdge } from "./DependencyEdge";
import { panIntoView } from "./view";
import { Overview } from "./Overview";
import { DETAIL_ZOOM, TaskNodeComponent, type TaskFlowNode } from "./TaskNode";

/** From this many visible tasks on, the zoomed-out view is one canvas (see Overview). */
const OVERVIEW_MIN_NODES = 150;
const zoomedOutSelector = (s: ReactFlowState) => s.transform[2] < DETAIL_ZOOM;
const widthSelector = (s: ReactFlowState) => s.width;
const heightSelector = (s: ReactFlowState) => s.height;

const nodeTypes = { task: TaskNodeComponent };

// Handle positions given up front (they match TaskNode's <Handle>s): React Flow then need not
// mount every node once to measure it, so only the tasks in view are ever rendered.
const S = 6;
const HANDLES: NonNullable<TaskFlowNode["handles"]> = [
  { id: "in", type: "target", position: Position.Left, x: -S / 2, y: NODE_HEIGHT / 2 - S / 2, width: S, height: S },
  { id: "out", type: "source", position: Position.Right, x: NODE_WIDTH - S / 2, y: NODE_HEIGHT / 2 - S / 2, width: S, height: S },
  { id: "dep-out", type: "source", position: Position.Right, x: NODE_WIDTH - S / 2, y: DEP_OUT_Y - S / 2, width: S, height: S },
  { id: "dep-in", type: "target", position: Position.Right, x: NODE_WIDTH - S / 2, y: DEP_IN_Y - S / 2, width: S, height: S },
];
const edgeTypes = { dependency: DependencyEdge };

const treeEdgeStyle = { stroke: "var(--edge)", strokeWidth: 1.5 };
const depEdgeStyle = { stroke: "var(--accent)", strokeWidth: 1.5, strokeDasharray: "5 4" };
const depMarker = { type: MarkerType.ArrowClosed, color: "var(--accent)", width: 16, height: 16 };

function Graph() {
  const structure = useStore((s) => s.graph.structure);
  const projectId = useStore((s) => s.graph.projectId);
  const collapsed = useStore((s) => s.collapsed);
  const select = useStore((s) => s.select);
  const selected = useStore((s) => s.selected);
  const flow = useReactFlow();
  const flowStore = useStoreApi();
  const zoomedOut = useFlowStore(zoomedOutSelector);
  const paneWidth = useFlowStore(widthSelector);
  const paneHeight = useFlowStore(heightSelector);
  const userMoved = useRef(false);
  const shown = useRef(0);

  const layout = useMemo(
    () => layoutTree(useStore.getState().graph.nodes, collapsed),
    // The layout depends on the shape only; `structure` changes exactly when the shape does.
    [structure, collapsed],
  );

  // A jump straight to a far zoom (fit) first switches to the overview, then moves: otherwise
  // React Flow would mount every task for the one frame before the overview takes over.
  const [enteringOverview, setEnteringOverview] = useState(false);
  const pendingViewport = useRef<Viewport | null>(null);
  const big = layout.nodes.length >= OVERVIEW_MIN_NODES;
  const overview = big && (zoomedOut || enteringOverview);
  const overviewNow = useRef(overview);
  overviewNow.current = overview;

  const nodes = useMemo<TaskFlowNode[]>(
    () =>
      layout.nodes.map((p) => ({
        hidden: overview,
        id: p.id,
        type: "task",
        position: { x: p.x, y: p.y },
        width: NODE_WIDTH,
        height: NODE_HEIGHT,
        handles: HANDLES,
        data: { hasChildren: p.hasChildren, hiddenDescendants: p.hiddenDescendants },
        draggable: false,
        connectable: false,
      })),
    [layout, overview],
  );

  const edges = useMemo<Edge[]>(
    () =>
      overview ? [] : layout.edges.map((e) =>
        e.kind === "tree"
          ? { id: e.id, source: e.source, target: e.target, sourceHandle: "out", targetHandle: "in", type: "smoothstep", style: treeEdgeStyle, focusable: false, selectable: false, interactionWidth: 0 }
          : { id: e.id, source: e.source, target: e.target, sourceHandle: "dep-out", targetHandle: "dep-in", type: "dependency", style: depEdgeStyle, markerEnd: depMarker, focusable: false, selectable: false, interactionWidth: 0, zIndex: 1 },
      ),
    [layout, overview],
  );

  // Fit from the layout's size (works whether tasks are DOM nodes or drawn on the overview canvas).
  const fit = useCallback(() => {
    const { width, height } = flowStore.getState();
    if (!width || !height || layout.nodes.length === 0) return;
    // Room around the tree, on the left for the zoom controls too.
    const padX = Math.max(56, width * 0.06);
    const padY = Math.max(16, height * 0.06);
    const zoom = Math.max(
      0.005,
      Math.min(1.1, (width - 2 * padX) / layout.width, (height - 2 * padY) / layout.height),
    );
    const viewport = { x: (width - layout.width * zoom) / 2, y: (height - layout.height * zoom) / 2, zoom };
    if (big && zoom < DETAIL_ZOOM && !overviewNow.current) {
      pendingViewport.current = viewport;
      setEnteringOverview(true);
      return;
    }
    void flow.setViewport(viewport);
  }, [flow, flowStore, layout, big]);

  useEffect(() => {
    if (!enteringOverview) return;
    if (pendingViewport.current) void flow.setViewport(pendingViewport.current);
    pendingViewport.current = null;
    setEnteringOverview(false);
  }, [enteringOverview, flow]);

  useEffect(() => {
    userMoved.current = false;
    shown.current = 0;
  }, [projectId]);

  // Follow the growing tree until the user pans or zooms themselves.
  useEffect(() => {
    if (nodes.length === 0 || nodes.length === shown.current || userMoved.current) return;
    shown.current = nodes.length;
    fit();
  }, [nodes, fit]);

  // The inspector opens beside (or, in a narrow window, below) the graph and so makes it smaller:
  // when the graph changes size, the whole tree is fitted again (until the user pans or zooms
  // themselves); otherwise the selected task is panned back into view.
  useEffect(() => {
    if (!paneWidth || !paneHeight) return;
    if (!userMoved.current) {
      fit();
      return;
    }
    if (!selected) return;
    const placed = layout.nodes.find((p) => p.id === selected);
    if (!placed) return;
    const [x, y, zoom] = flowStore.getState().transform;
    const left = placed.x * zoom + x;
    const top = placed.y * zoom + y;
    const box = { left, top, right: left + NODE_WIDTH * zoom, bottom: top + NODE_HEIGHT * zoom };
    const { dx, dy } = panIntoView(box, paneWidth, paneHeight);
    if (dx !== 0 || dy !== 0) void flow.setViewport({ x: x + dx, y: y + dy, zoom }, { duration: 150 });
  }, [selected, paneWidth, paneHeight, layout, fit, flow, flowStore]);

  const onNodeClick: NodeMouseHandler<TaskFlowNode> = (_, node) => select(node.id);

  // In the overview, a click zooms in there (and selects the task under the pointer, if any).
  const onPaneClick = (event: MouseEvent) => {
    if (!overview) return select(null);
    const point = flow.screenToFlowPosition({ x: event.clientX, y: event.clientY });
    const hit = layout.nodes.find(
      (p) => point.x >= p.x && point.x <= p.x + NODE_WIDTH && point.y >= p.y && point.y <= p.y + NODE_HEIGHT,
    );
    select(hit ? hit.id : null);
    userMoved.current = true;
    const center = hit ? { x: hit.x + NODE_WIDTH / 2, y: hit.y + NODE_HEIGHT / 2 } : point;
    void flow.setCenter(center.x, center.y, { zoom: 0.8 });
  };

  return (
    <ReactFlow<TaskFlowNode, Edge>
      nodes={nodes}
      edges={edges}
      nodeTypes={nodeTypes}
      edgeTypes={edgeTypes}
      onNodeClick={onNodeClick}
      onPaneClick={onPaneClick}
      onMove={(event) => {
        // Only a real pan or zoom (a click on a task also starts a "move", which moves nothing).
        if (event) userMoved.current = true;
      }}
      nodesDraggable={false}
      nodesConnectable={false}
      elementsSelectable={false}
      onlyRenderVisibleElements
      minZoom={0.005}
      maxZoom={2}
      proOptions={{ hideAttribution: true }}
    >
      <Background gap={24} size={1} />
      <Controls showInteractive={false} showFitView={false} position="bottom-left">
        <ControlButton onClick={fit} title="Fit the whole tree" aria-label="fit view">
          ⤢
        </ControlButton>
      </Controls>
      {overview && <Overview layout={layout} />}
    </ReactFlow>
  );
}

export function TaskGraph() {
  return (
    <div className="graph" data-testid="graph">
      <ReactFlowProvider>
        <Graph />
      </ReactFlowProvider>
    </div>
  );
}
