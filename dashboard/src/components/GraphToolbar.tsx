import { download, graphToJson, graphToPng, graphToSvg } from "../graph/export";
import { errorText } from "../format";
import { useStore } from "../state/store";

const LEGEND = [
  ["pending", "Pending"],
  ["ready", "Ready"],
  ["planning", "Planning"],
  ["executing", "Executing"],
  ["aggregating", "Aggregating"],
  ["done", "Done"],
  ["failed", "Failed"],
] as const;

export function GraphToolbar() {
  const notify = useStore((s) => s.notify);
  const exportAs = async (kind: "json" | "svg" | "png") => {
    const { graph, currentId } = useStore.getState();
    const name = `${currentId ?? "graph"}-graph.${kind}`;
    try {
      if (kind === "json") download(name, graphToJson(currentId ?? "", graph.root, graph.nodes), "application/json");
      else if (kind === "svg") download(name, graphToSvg(graph.nodes).svg, "image/svg+xml");
      else download(name, await graphToPng(graph.nodes));
    } catch (err) {
      notify("error", errorText(err));
    }
  };
  return (
    <div className="graph-toolbar">
      <div className="legend">
        {LEGEND.map(([cls, label]) => (
          <span key={cls} className={`legend-item status-${cls}`}>
            <i />
            {label}
          </span>
        ))}
        <span className="legend-item dep">
          <i />
          depends on
        </span>
      </div>
      <div className="export">
        <span className="muted">Export graph:</span>
        <button type="button" onClick={() => exportAs("json")} data-testid="export-json">JSON</button>
        <button type="button" onClick={() => exportAs("svg")} data-testid="export-svg">SVG</button>
        <button type="button" onClick={() => exportAs("png")} data-testid="export-png">PNG</button>
      </div>
    </div>
  );
}
