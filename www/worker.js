// pinbench's run worker: loads the app's own wasm (the page passes the URLs Trunk gave
// it) and hands control to the run session's worker host (src/web/worker.rs).
const q = new URL(self.location.href).searchParams;
const glue = await import(q.get("js"));
await glue.default({ module_or_path: q.get("wasm") });
glue.pinbench_worker_main();
