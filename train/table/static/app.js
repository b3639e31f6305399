// The browser table of uno-play --web: draws the game the server sends (train/table/web.py) and sends clicks.
// A game: POST /api/games, then POST /api/games/ID/moves per click. A replay: POST /api/replays with a record.
"use strict";

const COLOURS = ["red", "green", "blue", "yellow"];
const RANKS = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "skip", "rev", "+2"];
const DRAW = 60;
const $ = (selector) => document.querySelector(selector);
let game = null;     // the state of the game in play, as the server sent it
let replay = null;   // {players, winner, positions} of a loaded record
let at = 0;          // the replay position shown
let pendingWild = null;

// A card name of RULES.md ("red:7", "blue:draw2", "wild_draw4") as people say it.
function label(name) {
  if (name === "wild") return "wild";
  if (name === "wild_draw4") return "wild +4";
  const [colour, rank] = name.split(":");
  return `${colour} ${rank === "draw2" ? "+2" : rank}`;
}

function shortRank(name) {
  if (name === "wild") return "wild";
  if (name === "wild_draw4") return "+4";
  const rank = name.split(":")[1];
  return {draw2: "+2", reverse: "rev"}[rank] || rank;
}

async function api(method, path, body) {
  const options = {method, headers: {}};
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

// Runs one request-and-redraw; data-busy lets people (and tests) see when the page is settled.
async function busy(work) {
  document.body.dataset.busy = "1";
  $("#message").textContent = "";
  try {
    await work();
  } catch (error) {
    $("#message").textContent = error.message;
  } finally {
    document.body.dataset.busy = "0";
  }
}

function cardElement(card, {playable = false, count = 1, tag = "div"} = {}) {
  const element = document.createElement(tag);
  element.className = `card ${card.colour}` + (playable ? " playable" : "");
  element.dataset.card = card.card;
  element.textContent = shortRank(card.card);
  element.title = label(card.card);
  if (count > 1) {
    const badge = document.createElement("span");
    badge.className = "count";
    badge.textContent = `x${count}`;
    element.appendChild(badge);
  }
  return element;
}

function backs(count) {
  const shown = Math.min(count, 20);
  const cards = [];
  for (let i = 0; i < shown; i++) {
    const back = document.createElement("div");
    back.className = "card back";
    back.textContent = "UNO";
    cards.push(back);
  }
  return cards;
}

function eventLine(event, names) {
  if (event.kind === "reshuffle") return "pile reshuffled into deck";
  const who = event.player === "agent" ? names[0] : names[1];
  if (event.kind === "draw") return `${who}: drew ${event.count}`;
  return event.card.startsWith("wild") ? `${who}: ${label(event.card)} -> ${event.colour}` : `${who}: ${label(event.card)}`;
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

// Draws a table: `table` is one seat's view (hand, top, sizes...); `otherHand` shows the other hand face up.
function drawTable(table, {names, legal = [], otherHand = null, events = [], result = null}) {
  const playable = new Set(legal.filter((m) => m.card).map((m) => m.card));
  $("#opponent-label").textContent = `${names[1]}: ${plural(table.opponent_hand_size, "card")}`;
  $("#opponent-cards").replaceChildren(...(otherHand ? otherHand.map((c) => cardElement(c, {count: c.count}))
                                                     : backs(table.opponent_hand_size)));
  const deck = $("#deck");
  const canDraw = legal.some((m) => m.action === DRAW);
  deck.disabled = !canDraw;
  deck.classList.toggle("drawable", canDraw);
  $("#deck-label").textContent = `deck ${table.deck_size}`;
  $("#top-card").replaceChildren(cardElement(table.top));
  $("#pile-label").textContent = `pile ${table.discard_size}`;
  $("#colour-dot").style.background = `var(--${table.active_colour})`;
  $("#colour-name").textContent = table.active_colour;
  $("#pending").textContent = table.pending_draw ? `${names[0]} must draw ${table.pending_draw}` : "";
  const size = table.hand.reduce((sum, c) => sum + c.count, 0);
  const turn = legal.length ? "your turn; playable cards raised" : "waiting";
  $("#hand-label").textContent = `${names[0] === "you" ? "Your hand" : names[0]}: ${plural(size, "card")} (${turn})`;
  $("#hand").replaceChildren(...table.hand.map((c) => {
    const element = cardElement(c, {playable: playable.has(c.card), count: c.count, tag: "button"});
    element.disabled = !playable.has(c.card);
    if (playable.has(c.card)) element.addEventListener("click", () => choose(c.card));
    return element;
  }));
  $("#events").replaceChildren(...events.slice(-12).map((e) => {
    const item = document.createElement("li");
    item.textContent = eventLine(e, names);
    return item;
  }));
  $("#result").hidden = !result;
  $("#result").textContent = result || "";
}

function drawHeat(expected, title) {
  const heat = $("#heat");
  heat.hidden = !expected;
  if (!expected) return;
  $("#heat-title").textContent = title;
  const top = Math.max(...expected, 0.01);
  const cell = (card, text) => {
    const td = document.createElement("td");
    td.textContent = `${text} ${expected[card].toFixed(2)}`;
    td.title = `${label(cardName(card))}: ${expected[card].toFixed(2)} expected`;
    td.style.background = `rgba(214, 39, 24, ${(expected[card] / top).toFixed(3)})`;
    td.dataset.card = cardName(card);
    return td;
  };
  const rows = COLOURS.map((colour, c) => {
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    th.textContent = colour;
    tr.append(th, ...RANKS.map((rank, r) => cell(c * 13 + r, rank)));
    return tr;
  });
  const wilds = document.createElement("tr");
  const th = document.createElement("th");
  th.textContent = "wild";
  wilds.append(th, cell(52, "wild"), cell(53, "+4"));
  $("#heat-map").replaceChildren(...rows, wilds);
}

function cardName(card) {
  if (card === 52) return "wild";
  if (card === 53) return "wild_draw4";
  const rank = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "skip", "reverse", "draw2"][card % 13];
  return `${COLOURS[Math.floor(card / 13)]}:${rank}`;
}

const OUTCOME = {agent: "You won", opponent: "You lost", draw: "Drawn game"};

function showGame() {
  $("#replay-controls").hidden = true;
  drawTable(game, {names: game.players, legal: game.legal, events: game.events, result: OUTCOME[game.winner]});
  drawHeat(game.belief, `What card counting expects ${game.players[1]} to hold`);
  const link = $("#record-link");
  link.hidden = false;
  link.href = `/api/games/${game.id}/record`;
  link.download = `uno-web-${game.seed}.json`;
}

function showReplay() {
  const position = replay.positions[at];
  const names = replay.players;
  const last = replay.positions.length - 1;
  const result = at === last && replay.winner
    ? {agent: `${names[0]} won`, opponent: `${names[1]} won`, draw: "Drawn game"}[replay.winner] : null;
  drawTable(position, {names, otherHand: position.other_hand, events: position.events, result});
  $("#replay-at").textContent = `move ${at} of ${last}`;
  $("#replay-move").textContent = position.events.map((e) => eventLine(e, names)).join("; ");
  drawHeat($("#belief").checked ? position.belief[0] : null,
           `What ${names[0]}'s card counting expects ${names[1]} to hold`);
}

function choose(card) {
  if (card.startsWith("wild")) {
    pendingWild = card;
    $("#colour-picker").hidden = false;
    return;
  }
  play(game.legal.find((m) => m.card === card).action);
}

function play(action) {
  busy(async () => {
    game = await api("POST", `/api/games/${game.id}/moves`, {action});
    showGame();
  });
}

async function newGame() {
  await busy(async () => {
    replay = null;
    game = await api("POST", "/api/games", {
      opponent: $("#opponent").value, first: $("#first").value, belief: $("#belief").checked,
    });
    showGame();
  });
}

function stepReplay(target) {
  at = Math.max(0, Math.min(replay.positions.length - 1, target));
  showReplay();
}

async function loadReplay(file) {
  await busy(async () => {
    let record;
    try {
      record = JSON.parse(await file.text());
    } catch (error) {
      throw new Error(`${file.name} is not JSON: ${error.message}`);
    }
    try {
      replay = await api("POST", "/api/replays", record);
    } catch (error) {
      throw new Error(`${file.name}: ${error.message}`);
    }
    game = null;
    at = 0;
    $("#record-link").hidden = true;
    $("#replay-controls").hidden = false;
    showReplay();
  });
}

async function start() {
  await busy(async () => {
    const options = await api("GET", "/api/options");
    $("#opponent").replaceChildren(...options.opponents.map((name) => new Option(name, name)));
    $("#opponent").value = options.default_opponent;
  });
  $("#new-game").addEventListener("click", newGame);
  $("#deck").addEventListener("click", () => play(DRAW));
  $("#colour-picker").addEventListener("click", (event) => {
    const colour = event.target.dataset.colour;
    if (colour === undefined) return;
    $("#colour-picker").hidden = true;
    if (colour) play(game.legal.find((m) => m.card === pendingWild && m.colour === colour).action);
  });
  $("#replay-file").addEventListener("change", (event) => {
    if (event.target.files.length) loadReplay(event.target.files[0]);
  });
  $("#replay-start").addEventListener("click", () => stepReplay(0));
  $("#replay-back").addEventListener("click", () => stepReplay(at - 1));
  $("#replay-next").addEventListener("click", () => stepReplay(at + 1));
  $("#replay-end").addEventListener("click", () => stepReplay(Infinity));
  $("#belief").addEventListener("change", () => (replay ? showReplay() : null));
  await newGame();
}

start();
