// The final (or partial) report, rendered as sanitised Markdown, with downloads and exports.

import { useEffect, useState } from "react";
import { api } from "../api/http";
import type { ReportJson } from "../api/types";
import { errorText } from "../format";
import { download } from "../graph/export";
import { useStore } from "../state/store";
import { Markdown } from "./Markdown";

const FORMATS = [
  { format: "md", label: "Markdown", ext: "md" },
  { format: "html", label: "HTML", ext: "html" },
  { format: "json", label: "JSON", ext: "json" },
] as const;

export function ReportView() {
  const projectId = useStore((s) => s.currentId);
  const status = useStore((s) => s.project?.status);
  const updated = useStore((s) => s.project?.updated_at);
  const notify = useStore((s) => s.notify);
  const [report, setReport] = useState<ReportJson | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!projectId) return;
    let live = true;
    api
      .reportJson(projectId)
      .then((r) => live && (setReport(r), setError(null)))
      .catch((err: unknown) => live && setError(errorText(err)));
    return () => {
      live = false;
    };
  }, [projectId, status, updated]);

  const save = async (format: "md" | "html" | "json", ext: string) => {
    if (!projectId) return;
    try {
      download(`${projectId}-report.${ext}`, await api.reportFile(projectId, format));
    } catch (err) {
      notify("error", errorText(err));
    }
  };

  return (
    <div className="report" data-testid="report-view">
      <div className="report-toolbar">
        <span className="muted">Download report:</span>
        {FORMATS.map((f) => (
          <button key={f.format} type="button" onClick={() => save(f.format, f.ext)} data-testid={`download-${f.format}`}>
            {f.label}
          </button>
        ))}
      </div>
      {error && <div className="error-box">{error}</div>}
      {report?.partial && (
        <div className="notice-banner" data-testid="report-partial">
          This report is partial: the run has not finished (or did not finish normally).
        </div>
      )}
      {report ? (
        <article className="report-body">
          <Markdown text={report.markdown} testId="report-markdown" />
        </article>
      ) : (
        !error && <p className="muted">Loading report…</p>
      )}
    </div>
  );
}
