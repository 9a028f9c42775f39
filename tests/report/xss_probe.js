// Runs after the page loaded and its timers had time: did any payload run, did any element
// with an event handler, a script or a javascript: link appear, and what text is shown?
window.addEventListener('load', () => setTimeout(() => {
  const handlers = [];
  document.querySelectorAll('*').forEach(el => {
    for (const a of el.attributes) {
      if (a.name.startsWith('on') || /^\s*javascript:/i.test(a.value)) handlers.push([el.tagName, a.name]);
    }
  });
  const out = {title: document.title, flag: window.__xss === undefined ? null : String(window.__xss),
               scripts: document.querySelectorAll('script').length,
               images: document.querySelectorAll('img').length, handlers: handlers,
               text: document.body.innerText,
               svgText: Array.from(document.querySelectorAll('figure svg text')).map(t => t.textContent)};
  const pre = document.createElement('pre');
  pre.id = 'xss-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}, 300));
