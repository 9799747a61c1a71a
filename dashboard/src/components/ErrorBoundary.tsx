import { Component, type ErrorInfo, type ReactNode } from "react";

interface State {
  error: Error | null;
}

/** Keeps one broken panel (e.g. an unexpected payload) from blanking the whole dashboard. */
export class ErrorBoundary extends Component<{ children: ReactNode; label: string; resetKey?: unknown }, State> {
  state: State = { error: null };

  static getDerivedStateFromError(error: Error): State {
    return { error };
  }

  componentDidUpdate(prev: { resetKey?: unknown }): void {
    if (prev.resetKey !== this.props.resetKey && this.state.error) this.setState({ error: null });
  }

  componentDidCatch(error: Error, info: ErrorInfo): void {
    console.error(`${this.props.label} failed`, error, info.componentStack);
  }

  render(): ReactNode {
    if (this.state.error) {
      return (
        <div className="error-box panel-error" role="alert">
          The {this.props.label} could not be shown: {this.state.error.message}
        </div>
      );
    }
    return this.props.children;
  }
}
