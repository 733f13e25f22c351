/// The studio's stylesheet and script, in the binary: no build step, no network.
enum StudioStyle {
    /// Live pages: when a commit touches what the page shows, the page is fetched again and its
    /// main part replaced, unless a form field has the focus (then it says so instead).
    static let script = """
        (() => {
          // Typing into a field clears its nil box.
          document.addEventListener('input', (event) => {
            const box = event.target.id && document.getElementById(event.target.id + '-nil');
            if (box) box.checked = false;
          });
          if (!window.EventSource) return;
          const schema = document.body.dataset.schema, entity = document.body.dataset.entity;
          const status = document.getElementById('live');
          // A commit during a refresh refreshes again after it: the page ends up with both.
          let busy = false, again = false;
          const refresh = async (change) => {
            if (busy) { again = true; return; }
            busy = true;
            try {
              do {
                again = false;
                const response = await fetch(location.href, { credentials: 'same-origin', cache: 'no-store' });
                if (!response.ok) return;
                const page = new DOMParser().parseFromString(await response.text(), 'text/html');
                const main = page.querySelector('main');
                if (main) document.querySelector('main').replaceWith(main);
              } while (again);
              status.textContent = 'Updated at ' + new Date().toLocaleTimeString() + ': ' + (change.entities.join(', ') || 'records') + ' changed.';
            } finally {
              busy = false;
            }
          };
          const onChange = async (change) => {
            if (schema && change.schema !== schema) return;
            // A change passed before this page joined the stream names no entities: refresh.
            if (entity && !change.missed && !change.entities.includes(entity)) return;
            const focused = document.activeElement;
            if (focused && focused.closest('form')) {
              status.textContent = (change.entities.join(', ') || 'Records') + ' changed; reload to see it.';
              return;
            }
            await refresh(change);
          };
          // From where the page's data was read: a commit before the stream connects still arrives.
          const since = document.body.dataset.since || '';
          // One stream for every open page (a shared worker): a browser opens at most six
          // connections to a host, and a stream per page would starve the seventh tab.
          if (window.SharedWorker) {
            const worker = new SharedWorker('/studio-worker.js');
            worker.port.onmessage = (event) => onChange(event.data);
            worker.port.start();
            worker.port.postMessage({ since });
          } else {
            new EventSource('/events?since=' + encodeURIComponent(since)).addEventListener('change', (event) => onChange(JSON.parse(event.data)));
          }
        })();
        """

    /// The shared worker behind every open page: one event stream, each change passed to every
    /// page. A page that connects later says where its data was read; if the stream has
    /// already passed that point for its schema, the page is told to refresh.
    static let worker = """
        const ports = [];
        const newest = {};
        let source = null;
        // Tokens are 64-bit: compared as BigInt (a Number is exact only to 2^53).
        const parse = (text) => Object.fromEntries(text.split(',').filter((part) => /^[^:]+:[0-9]+$/.test(part)).map((part) => {
          const [schema, token] = part.split(':');
          return [schema, BigInt(token)];
        }));
        onconnect = (event) => {
          const port = event.ports[0];
          port.onmessage = (message) => {
            const since = parse(message.data.since || '');
            if (!source) {
              Object.assign(newest, since);
              source = new EventSource('/events?since=' + encodeURIComponent(message.data.since || ''));
              source.addEventListener('change', (change) => {
                const data = JSON.parse(change.data);
                const token = BigInt(data.token);
                if (!(data.schema in newest) || token > newest[data.schema]) newest[data.schema] = token;
                for (const each of ports) each.postMessage(data);
              });
            } else {
              for (const schema of Object.keys(newest)) {
                if (schema in since && newest[schema] > since[schema]) port.postMessage({ schema, entities: [], token: String(newest[schema]), missed: true });
              }
            }
            ports.push(port);
          };
          port.start();
        };
        """

    static let css = """
        :root { color-scheme: light dark; --line: #8884; --accent: #2563eb; }
        body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 96rem; padding: 0 1.25rem 3rem; }
        header { border-bottom: 1px solid var(--line); margin-bottom: 1rem; }
        .where { color: #888; margin: .75rem 0 0; font-size: .9em; }
        h1 { margin: .25rem 0 .75rem; font-size: 1.5rem; }
        table { border-collapse: collapse; margin: .5rem 0 1rem; }
        th, td { border-bottom: 1px solid var(--line); padding: .3rem .6rem; text-align: left; vertical-align: top; }
        th a { text-decoration: none; }
        th[aria-sort="ascending"] a::after { content: " ▲"; }
        th[aria-sort="descending"] a::after { content: " ▼"; }
        td.number { text-align: right; font-variant-numeric: tabular-nums; }
        td time { white-space: nowrap; }
        .scroll { overflow-x: auto; }
        .null { color: #999; font-style: italic; }
        .locked { color: #b45309; }
        .warn { color: #b45309; }
        .notice { color: #15803d; }
        .note, .type { color: #888; }
        tr.differs td { background: #fde68a55; }
        .enum { font-family: ui-monospace, monospace; }
        img.preview { max-height: 3rem; max-width: 6rem; vertical-align: middle; }
        a:focus, button:focus, select:focus, input:focus, summary:focus { outline: 2px solid var(--accent); outline-offset: 2px; }
        .filter { margin: .25rem 0; }
        .filter label:first-child { display: inline-block; min-width: 10rem; }
        .hidden { position: absolute; left: -10000px; }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; }
        dt { font-weight: 600; }
        dd { margin: 0; }
        nav a { margin-right: 1rem; }
        """
}
