// Refreshing a page's data while it is shown.

/** Run ``refresh`` now and every ``ms`` after each run finishes (runs never
 * overlap); the returned function stops it. */
export function poll(refresh, ms = 2000) {
  let timer = null;
  let stopped = false;
  const run = async () => {
    try {
      await refresh();
    } finally {
      if (!stopped) timer = window.setTimeout(run, ms);
    }
  };
  run();
  return () => {
    stopped = true;
    window.clearTimeout(timer);
  };
}
