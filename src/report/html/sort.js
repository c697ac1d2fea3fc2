"use strict";
// Sort a table by a column when its heading is clicked: numbers by their exact value
// (data-v), text by the language's order; a second click reverses.
for (const table of document.querySelectorAll("table.sortable")) {
  const heads = Array.from(table.tHead.rows[0].cells);
  heads.forEach((th, col) => {
    th.querySelector("button").addEventListener("click", () => {
      const up = th.getAttribute("aria-sort") !== "ascending";
      for (const h of heads) h.removeAttribute("aria-sort");
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      const body = table.tBodies[0];
      const key = (row) => {
        const cell = row.cells[col];
        return cell && cell.dataset.v !== undefined ? Number(cell.dataset.v) : (cell ? cell.textContent : "");
      };
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const x = key(a), y = key(b);
        const d = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return up ? d : -d;
      });
      for (const r of rows) body.appendChild(r);
    });
  });
}
