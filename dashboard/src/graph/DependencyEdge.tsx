import { BaseEdge, type EdgeProps } from "@xyflow/react";
import { memo } from "react";
import { dependencyBulge } from "./layout";

/**
 * A sibling dependency: siblings are stacked vertically, so the edge arcs out to the right
 * of the column (from the source's right side to the target's right side) instead of
 * crossing the nodes between them.
 */
function DependencyEdgeView({ sourceX, sourceY, targetX, targetY, markerEnd, style }: EdgeProps) {
  const bulge = dependencyBulge(sourceY, targetY);
  const path = `M${sourceX},${sourceY} C${sourceX + bulge},${sourceY} ${targetX + bulge},${targetY} ${targetX},${targetY}`;
  return <BaseEdge path={path} markerEnd={markerEnd} style={style} />;
}

export const DependencyEdge = memo(DependencyEdgeView);
