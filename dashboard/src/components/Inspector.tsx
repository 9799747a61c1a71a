// The node inspector: everything known about one task, live from the store, plus its agent
// calls (prompt, context, response) fetched from the server when the node changes.

import { useEffect, useState } from "react";
import { api } from "../api/http";
import type { AgentCall, NodeDetail, TaskNode } from "../api/types";
import { clock, cost, count, errorText, seconds } from "../format";
import { statusColour } from "../graph/export";
import { useStore } from "../state/store";
import { Markdown } from "./Markdown";
import { canRerun, RerunPanel } from "./RerunPanel";

function Timeline({ node }: { node: TaskNode }) {
  const start = node.history[0]?.at ?? 0;
  return (
    <ol className="timeline" data-testid="status-timeline">
      {node.history.map((h, i) => (
        <li key={`${h.status}-${i}`}>
          <span className="timeline-dot" style={{ background: statusColour(h.status) }} />
          <span className="timeline-status">{h.status}</span>
          <span className="muted">
            {clock(h.at)} {i > 0 ? `(+${seconds(h.at - start)})` : ""}
          </span>
        </li>
      ))}
    </ol>
  );
}

function contextText(context: unknown): string {
  if (context === null || context === undefined || context === "") return "—";
  return typeof context === "string" ? context : JSON.stringify(context, null, 2);
}

function Call({ call, index }: { call: AgentCall; index: number }) {
  return (
    <details className="call" open={index === 0} data-testid="agent-call">
      <summary>
        <strong>{call.role}</strong> · {call.agent} · <code>{call.model}</code>
        <span className="muted">
          {" "}
          · {seconds(call.latency_s)} · {count(call.input_tokens)}/{count(call.output_tokens)} tok
          {call.attempts > 1 ? ` · ${call.attempts} attempts` : ""}
          {call.cached ? " · cached" : ""}
        </span>
      </summary>
      {call.error && <div className="error-box">{call.error}</div>}
      <h5>Context</h5>
      <pre className="trace" data-testid="call-context">{contextText(call.context)}</pre>
      <h5>Prompt</h5>
      <pre className="trace" data-testid="call-prompt">{call.prompt}</pre>
      <h5>Response</h5>
      <pre className="trace" data-testid="call-response">{call.response ?? "—"}</pre>
    </details>
  );
}

export function Inspector() {
  const selected = useStore((s) => s.selected);
  const projectId = useStore((s) => s.currentId);
  const node = useStore((s) => (s.selected ? s.graph.nodes.get(s.selected) : undefined));
  const select = useStore((s) => s.select);
  const projectStatus = useStore((s) => s.project?.status);
  const [detail, setDetail] = useState<NodeDetail | null>(null);
  const [error, setError] = useState<string | null>(null);

  const status = node?.status;
  const calls = node?.agent_calls;
  useEffect(() => {
    if (!projectId || !selected) return;
    let live = true;
    const timer = setTimeout(() => {
      api
        .node(projectId, selected)
        .then((d) => live && (setDetail(d), setError(null)))
        .catch((err: unknown) => live && setError(errorText(err)));
    }, 150);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [projectId, selected, status, calls]);

  useEffect(() => setDetail(null), [selected]);

  if (!selected || !node) return null;
  const latency = (detail?.calls ?? []).reduce((sum, c) => sum + (c.latency_s ?? 0), 0);
  const models = [...new Set((detail?.calls ?? []).map((c) => `${c.agent} (${c.model})`))];
  return (
    <aside className="inspector" data-testid="inspector">
      <div className="inspector-head">
        <div>
          <div className="muted small">
            {node.task_id} · layer {node.layer}
          </div>
          <h2 data-testid="inspector-goal">{node.goal}</h2>
        </div>
        <button type="button" className="ghost close" aria-label="Close inspector" onClick={() => select(null)}>
          ×
        </button>
      </div>
      <div className="chips">
        <span className={`type-badge type-${node.task_type.toLowerCase()}`}>{node.task_type}</span>
        <span className="chip">{node.node_type}</span>
        <span className="chip status-chip" style={{ borderColor: statusColour(node.status), color: statusColour(node.status) }} data-testid="inspector-status">
          {node.status}
        </span>
      </div>
      <dl className="metrics">
        <div><dt>Agent calls</dt><dd>{count(node.agent_calls)}</dd></div>
        <div><dt>Tokens in</dt><dd>{count(node.input_tokens)}</dd></div>
        <div><dt>Tokens out</dt><dd>{count(node.output_tokens)}</dd></div>
        <div><dt>Cost</dt><dd>{cost(node.cost_usd)}</dd></div>
        <div><dt>Latency</dt><dd>{seconds(latency)}</dd></div>
        <div><dt>Depends on</dt><dd>{node.depends_on.join(", ") || "—"}</dd></div>
      </dl>
      {models.length > 0 && (
        <section>
          <h4>Agents</h4>
          <ul className="plain">{models.map((m) => <li key={m}>{m}</li>)}</ul>
        </section>
      )}
      {node.error && (
        <section>
          <h4>Error</h4>
          <div className="error-box" data-testid="inspector-error">{node.error}</div>
        </section>
      )}
      {node.warnings.length > 0 && (
        <section>
          <h4>Warnings</h4>
          <ul className="plain warnings">{node.warnings.map((w, i) => <li key={i}>{w}</li>)}</ul>
        </section>
      )}
      <section>
        <h4>Status timeline</h4>
        <Timeline node={node} />
      </section>
      {node.result && (
        <section>
          {/* A planned node has no result until it is DONE: before then, this is the direct answer of a
              question answered first that no source confirmed (TaskNode.unconfirmed_answer). */}
          <h4 data-testid="inspector-result-heading">
            {node.node_type === "PLAN" && node.status !== "DONE"
              ? "Unconfirmed direct answer (the question was then planned)"
              : "Result"}
          </h4>
          <Markdown text={node.result} testId="inspector-result" />
        </section>
      )}
      {node.sources.length > 0 && (
        <section>
          <h4>Sources</h4>
          <ol className="sources">
            {node.sources.map((s, i) => (
              <li key={`${s.ref}-${i}`}>
                {/^https?:\/\//i.test(s.ref) ? (
                  <a href={s.ref} target="_blank" rel="noopener noreferrer nofollow">{s.title || s.ref}</a>
                ) : (
                  <span>{s.title || s.ref}</span>
                )}
                {s.title && <div className="muted small"><code>{s.ref}</code></div>}
                {s.snippet && <div className="snippet">{s.snippet}</div>}
              </li>
            ))}
          </ol>
        </section>
      )}
      {projectId && canRerun(node, projectStatus) && <RerunPanel projectId={projectId} node={node} />}
      <section>
        <h4>Agent calls</h4>
        {error && <div className="error-box">{error}</div>}
        {detail === null && !error && <p className="muted">Loading…</p>}
        {detail && detail.calls.length === 0 && <p className="muted">No calls yet.</p>}
        {detail?.calls.map((c, i) => <Call key={`${c.started_at}-${i}`} call={c} index={i} />)}
      </section>
    </aside>
  );
}
