// Follow-up questions under the report: a box that asks one (POST /api/projects/{id}/followups) and
// the threads asked so far, each with its answer and its own references. A follow-up is researched
// as a project of its own that follows this one; the list is read again until every answer is in.

import { useCallback, useEffect, useState } from "react";
import { api } from "../api/http";
import type { Followup } from "../api/types";
import { answering, whyNotAsk } from "../report/followups";
import { useSubmit } from "../useSubmit";
import { Cited } from "./ReportView";

const POLL_MS = 1000;

export function FollowUps({ projectId, status }: { projectId: string; status: string | undefined }) {
  const [threads, setThreads] = useState<Followup[]>([]);
  const [question, setQuestion] = useState("");
  const { busy, error, run, fail, clear } = useSubmit();

  const load = useCallback(async () => setThreads((await api.followups(projectId)).followups), [projectId]);

  useEffect(() => {
    setThreads([]);
    setQuestion("");
    clear();
    load().catch(fail);
  }, [load, clear, fail]);

  const pending = threads.some(answering);
  useEffect(() => {
    if (!pending) return;
    const timer = window.setTimeout(() => load().catch(fail), POLL_MS);
    return () => window.clearTimeout(timer);
  }, [pending, threads, load, fail]);

  const ask = () =>
    run(async () => {
      await api.ask(projectId, question);
      setQuestion("");
      await load();
    });

  const refused = whyNotAsk(status);
  return (
    <section className="followups" data-testid="followups">
      <h2>Follow-up questions</h2>
      <p className="muted small">
        Answered from what this project found first; searched again only for what it lacks. The report above stays as
        it is.
      </p>
      <textarea
        aria-label="Follow-up question"
        data-testid="followup-question"
        placeholder="Ask a follow-up question about this report"
        rows={2}
        maxLength={4000}
        value={question}
        onChange={(e) => setQuestion(e.target.value)}
      />
      <div className="modal-actions">
        <button
          type="button"
          disabled={busy || refused !== null || !question.trim()}
          onClick={() => void ask()}
          data-testid="followup-ask"
        >
          Ask
        </button>
        {refused && <span className="muted small">{refused}</span>}
      </div>
      {error && <div className="error-box" data-testid="followup-error">{error}</div>}
      <ol className="followup-threads" data-testid="followup-threads">
        {threads.map((t) => (
          <li key={t.project.project_id} className="followup-thread" data-testid="followup-thread">
            <h3>{t.project.goal}</h3>
            {t.answer?.answer && !answering(t) ? (
              <Cited
                text={t.answer.answer}
                references={t.answer.references}
                consulted={[]}
                prefix={`${t.project.project_id}-`}
                unconfirmed={!t.answer.confirmed}
              />
            ) : (
              <p className="muted" data-testid="followup-status">
                {answering(t) ? "Researching…" : `No answer: ${t.project.error ?? t.project.status}`}
              </p>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}
