// The final (or partial) report, from the report's JSON: the answer as sanitised Markdown whose
// "[n]" link to the numbered references, each with its verification; the sections of a partial
// run; the structured answer of a run with an output schema (its JSON and the citations of each
// field); what is not covered. Downloads and exports.

import { useEffect, useState } from "react";
import { api, type ReportFormat } from "../api/http";
import type { Consulted, Missing, Reference, ReportResponse } from "../api/types";
import { errorText } from "../format";
import { download } from "../graph/export";
import { referenceId, safeUrl } from "../report/citations";
import { STRUCTURED_PREFIX, structuredMarkdown } from "../report/structured";
import { withoutTitle } from "../report/title";
import { useStore } from "../state/store";
import { FollowUps } from "./FollowUps";
import { Markdown } from "./Markdown";

// As the Markdown and HTML reports say it (sentient/context/grounding.py VERIFIED_MEANS).
const VERIFIED_MEANS = "Verified: a model read the passage and judged that it supports the answer it is cited for; a direct answer's passage also contains the answer's words and, read again without the answer, gives the same one; a quote is its passage's own words.";

const FORMATS = [
  { format: "md", label: "Markdown", ext: "md" },
  { format: "html", label: "HTML", ext: "html" },
  { format: "json", label: "JSON", ext: "json" },
  { format: "pdf", label: "PDF", ext: "pdf" },
  { format: "docx", label: "DOCX", ext: "docx" },
] as const;

export function ReportView() {
  const projectId = useStore((s) => s.currentId);
  const status = useStore((s) => s.project?.status);
  const updated = useStore((s) => s.project?.updated_at);
  const notify = useStore((s) => s.notify);
  const [report, setReport] = useState<ReportResponse | null>(null);
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

  const save = async (format: ReportFormat, ext: string) => {
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
          {report.stopped && <div>Stopped early: {report.stopped}.</div>}
          {!report.stopped && report.error && <div>Reason: {report.error}</div>}
        </div>
      )}
      {report ? <ReportBody report={report} /> : !error && <p className="muted">Loading report…</p>}
      {projectId && report && <FollowUps projectId={projectId} status={status} />}
    </div>
  );
}

function ReportBody({ report }: { report: ReportResponse }) {
  return (
    <article className="report-body" data-testid="report-body">
      {report.partial ? (
        <>
          <h1 className="report-title">{report.title}</h1>
          {report.answer && (
            <section className="report-section" data-testid="report-direct-answer">
              <h2>Direct answer, before the research was planned</h2>
              <Cited
                text={report.answer}
                references={report.references}
                consulted={report.consulted}
                prefix=""
                unconfirmed={!report.confirmed}
              />
            </section>
          )}
          {report.sections.map((section) => (
            <section key={section.task_id} className="report-section" data-testid="report-section">
              <h2>{section.goal}</h2>
              <Cited
                text={section.text}
                references={section.references}
                consulted={section.consulted}
                prefix={`${section.task_id}-`}
              />
            </section>
          ))}
          {report.sections.length === 0 && <p className="muted">No subtask finished.</p>}
        </>
      ) : (
        <>
          <h1 className="report-title">{report.title}</h1>
          <Cited
            text={withoutTitle(report.answer ?? "", report.title)}
            references={report.references}
            consulted={report.consulted}
            prefix=""
            unconfirmed={!report.confirmed}
          />
        </>
      )}
      {report.structured && (
        <section className="report-section" data-testid="report-structured">
          <h2>Structured answer</h2>
          <Cited
            text={structuredMarkdown(report.structured)}
            references={report.structured.references}
            consulted={[]}
            prefix={STRUCTURED_PREFIX}
          />
        </section>
      )}
      {report.missing.length > 0 && <NotCovered missing={report.missing} />}
    </article>
  );
}

/** A text and the sources it rests on: its "[n]" jump to the numbered references listed below it.
 * An answer that is not confirmed (`Report.confirmed`) says so under it, as the Markdown report does. */
export function Cited({
  text,
  references,
  consulted,
  prefix,
  unconfirmed = false,
}: {
  text: string;
  references: Reference[];
  consulted: Consulted[];
  prefix: string;
  unconfirmed?: boolean;
}) {
  return (
    <div className="cited">
      <Markdown text={text} citationPrefix={prefix} testId="report-text" />
      {unconfirmed && (
        <p className="unconfirmed" data-testid="report-unconfirmed">
          <strong>Not confirmed by the sources:</strong> no passage the research consulted could be shown to state
          this answer; treat it as the model's own.
        </p>
      )}
      {references.length > 0 && (
        <>
          <h3>References</h3>
          <ol className="references" data-testid="report-references">
            {references.map((r) => (
              <li
                key={r.n}
                id={referenceId(r.n, prefix)}
                value={r.n}
                className={`reference ${r.verified ? "verified" : "unverified"}`}
                data-verified={r.verified}
              >
                <SourceName kind={r.kind} location={r.ref} title={r.title} />
                {r.verified ? (
                  <span className="badge verified" title={VERIFIED_MEANS}>verified</span>
                ) : (
                  <span className="badge unverified" title="no model judged that it supports the answer">not verified</span>
                )}
              </li>
            ))}
          </ol>
          {references.some((r) => r.verified) && (
            <p className="verified-means" data-testid="report-verified-means">
              <em>{VERIFIED_MEANS}</em>
            </p>
          )}
        </>
      )}
      {consulted.length > 0 && (
        <>
          <h3>Other sources consulted</h3>
          <ul className="consulted" data-testid="report-consulted">
            {consulted.map((c) => (
              <li key={c.ref}>
                <SourceName kind={c.kind} location={c.ref} title={c.title} />
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

/** A source by its title (a link for a web page), with its URL or path. */
function SourceName({ kind, location, title }: { kind: Reference["kind"]; location: string; title: string }) {
  const url = kind === "url" ? safeUrl(location) : null;
  const name = title && title !== location ? title : null;
  return (
    <span className="source-name">
      {url ? (
        <a href={url} target="_blank" rel="noopener noreferrer nofollow">
          {name ?? location}
        </a>
      ) : (
        <span>{name ?? location}</span>
      )}
      {name && <code className="source-ref">{location}</code>}
    </span>
  );
}

function NotCovered({ missing }: { missing: Missing[] }) {
  return (
    <section className="not-covered" data-testid="report-missing">
      <h2>Not covered</h2>
      <p>These subtasks failed, so this report does not cover them:</p>
      <ul>
        {missing.map((m) => (
          <li key={m.task_id}>
            <code>{m.task_id}</code> {m.goal} — <span className="error-text">{m.error}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}
