// Untrusted Markdown (LLM results, web snippets, the report). No rehype-raw: raw HTML in
// the text is shown as text, never parsed. Links are http(s) or in-page citations only;
// images are not loaded (they would leak the reader to third parties).

import { memo, useMemo, type MouseEvent } from "react";
import ReactMarkdown, { type Components, type Options } from "react-markdown";
import remarkGfm from "remark-gfm";
import { remarkCitations, safeUrl } from "../report/citations";

function jumpToReference(event: MouseEvent<HTMLAnchorElement>, href: string): void {
  event.preventDefault();
  // A cited text and its reference list share a ".cited" container (see ReportView).
  const scope = event.currentTarget.closest(".cited") ?? event.currentTarget.closest(".markdown") ?? document;
  const target = scope.querySelector<HTMLElement>(`[id="${CSS.escape(href.slice(1))}"]`);
  if (!target) return;
  scope.querySelectorAll(".reference.highlighted").forEach((el) => el.classList.remove("highlighted"));
  target.classList.add("highlighted");
  target.scrollIntoView({ block: "center", behavior: "smooth" });
}

const components: Components = {
  a: ({ href, children, className }) => {
    if (!href) return <span className={className}>{children}</span>;
    if (href.startsWith("#")) {
      return (
        <a href={href} className={className} onClick={(e) => jumpToReference(e, href)}>
          {children}
        </a>
      );
    }
    return (
      <a href={href} className={className} target="_blank" rel="noopener noreferrer nofollow">
        {children}
      </a>
    );
  },
  img: ({ alt }) => <span className="image-placeholder">[image{alt ? `: ${alt}` : ""}]</span>,
};

/** `citationPrefix` starts the ids its "[n]" links point at (`#<prefix>ref-n`), to tell apart texts on one page. */
export const Markdown = memo(function Markdown({
  text,
  testId,
  citationPrefix = "",
}: {
  text: string;
  testId?: string;
  citationPrefix?: string;
}) {
  const remarkPlugins = useMemo<Options["remarkPlugins"]>(
    () => [remarkGfm, [remarkCitations, { prefix: citationPrefix }]],
    [citationPrefix],
  );
  return (
    <div className="markdown" data-testid={testId}>
      <ReactMarkdown remarkPlugins={remarkPlugins} urlTransform={(url) => safeUrl(url)} components={components}>
        {text}
      </ReactMarkdown>
    </div>
  );
});
