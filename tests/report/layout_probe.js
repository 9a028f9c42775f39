(function () {
  const out = {scrollWidth: document.documentElement.scrollWidth, viewport: window.innerWidth,
               figures: {}, overlaps: [], outside: []};
  document.querySelectorAll('figure').forEach(fig => {
    const box = fig.getBoundingClientRect();
    const texts = Array.from(fig.querySelectorAll('svg text'))
      .map(t => ({t: t.textContent.trim(), r: t.getBoundingClientRect()}))
      .filter(x => x.r.width > 0 && x.t);
    out.figures[fig.id] = texts.map(x => x.t);
    texts.forEach(x => { if (x.r.left < box.left - 1 || x.r.right > box.right + 1) out.outside.push([fig.id, x.t]); });
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i].r, b = texts[j].r;
      const ix = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const iy = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (ix > 1 && iy > 1) out.overlaps.push([fig.id, texts[i].t, texts[j].t, ix, iy]);
    }
  });
  const pre = document.createElement('pre');
  pre.id = 'layout-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
