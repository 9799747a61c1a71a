// One task in the graph. It reads its own node from the store by id, so a node_update for
// another task does not re-render it; the React Flow node object only carries layout facts.

import { Handle, Position, useStore as useFlowStore, type Node, type NodeProps, type ReactFlowState } from "@xyflow/react";
import { memo } from "react";
import { useStore } from "../state/store";
import { NODE_HEIGHT, NODE_WIDTH } from "./layout";

export interface TaskNodeData extends Record<string, unknown> {
  hasChildren: boolean;
  hiddenDescendants: number;
}

export type TaskFlowNode = Node<TaskNodeData, "task">;

/** Below this zoom the text is unreadable anyway: draw a coloured box (far cheaper to paint). */
export const DETAIL_ZOOM = 0.3;
const detailedSelector = (s: ReactFlowState) => s.transform[2] >= DETAIL_ZOOM;

function TaskNodeView({ id, data }: NodeProps<TaskFlowNode>) {
  const node = useStore((s) => s.graph.nodes.get(id));
  const selected = useStore((s) => s.selected === id);
  const collapsed = useStore((s) => s.collapsed.has(id));
  const toggle = useStore((s) => s.toggleCollapsed);
  const detailed = useFlowStore(detailedSelector);
  const status = node?.status ?? "PENDING";
  if (!detailed) {
    return (
      <div
        className={`task-node-lod status-${status.toLowerCase()}${selected ? " selected" : ""}`}
        style={{ width: NODE_WIDTH, height: NODE_HEIGHT }}
        data-testid="task-node"
        data-task-id={id}
        data-status={status}
      >
        <Handle type="target" position={Position.Left} id="in" isConnectable={false} />
        <Handle type="source" position={Position.Right} id="out" isConnectable={false} />
        <Handle type="source" position={Position.Right} id="dep-out" style={{ top: "30%" }} isConnectable={false} />
        <Handle type="target" position={Position.Right} id="dep-in" style={{ top: "70%" }} isConnectable={false} />
      </div>
    );
  }
  return (
    <div
      className={`task-node status-${status.toLowerCase()}${selected ? " selected" : ""}`}
      style={{ width: NODE_WIDTH, height: NODE_HEIGHT }}
      data-testid="task-node"
      data-task-id={id}
      data-status={status}
      title={node?.goal}
    >
      <Handle type="target" position={Position.Left} id="in" isConnectable={false} />
      <Handle type="source" position={Position.Right} id="out" isConnectable={false} />
      <Handle type="source" position={Position.Right} id="dep-out" style={{ top: "30%" }} isConnectable={false} />
      <Handle type="target" position={Position.Right} id="dep-in" style={{ top: "70%" }} isConnectable={false} />
      <div className="task-node-head">
        <span className={`type-badge type-${(node?.task_type ?? "").toLowerCase()}`}>{node?.task_type}</span>
        <span className="task-id">{id}</span>
        <span className="status-pill">{status.replace("_", " ")}</span>
      </div>
      <div className="task-goal">{node?.goal}</div>
      {data.hasChildren && (
        <button
          type="button"
          className="collapse-toggle nodrag"
          aria-label={collapsed ? "Expand subtree" : "Collapse subtree"}
          onClick={(e) => {
            e.stopPropagation();
            toggle(id);
          }}
        >
          {collapsed ? `+${data.hiddenDescendants}` : "−"}
        </button>
      )}
    </div>
  );
}

export const TaskNodeComponent = memo(TaskNodeView);
