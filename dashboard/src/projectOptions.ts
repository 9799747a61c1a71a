// The new-project form's options: shown with the selected profile's values (or the server's
// defaults), and sent only when the user changed them, so a profile's own settings are never
// overridden by the form.

import type { Profile } from "./api/types";

export interface Options {
  max_depth: number;
  review: string;
  /** Empty: the goal's language. */
  language: string;
  /** Empty: the server's model. */
  model: string;
  offline: boolean;
}

/** Used only if the server lists a profile without these settings. */
const FALLBACK: Options = { max_depth: 2, review: "none", language: "", model: "", offline: false };

/** The selected profile's own values for the form's options. */
export function profileOptions(profile: Profile | undefined): Options {
  const settings = profile?.settings ?? {};
  return {
    max_depth: typeof settings.max_depth === "number" ? settings.max_depth : FALLBACK.max_depth,
    review: typeof settings.review === "string" ? settings.review : FALLBACK.review,
    language: typeof settings.language === "string" ? settings.language : FALLBACK.language,
    model: FALLBACK.model,
    offline: FALLBACK.offline,
  };
}

/** The project's config: only the options the user set to something other than the profile's
 * value (text trimmed first; text left empty is the default). */
export function changedOptions(changed: Partial<Options>, defaults: Options): Partial<Options> {
  const config: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(changed)) {
    const value = typeof raw === "string" ? raw.trim() : raw;
    if (value !== defaults[key as keyof Options] && value !== "") config[key] = value;
  }
  return config as Partial<Options>;
}
