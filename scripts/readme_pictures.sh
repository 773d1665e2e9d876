#!/usr/bin/env bash
# Refreshes README's pictures (docs/*.png) from the browser tests: each test
# runs a real server on the demo workspace (seeded history) in headless
# Chromium and saves full-page screenshots to TESSERA_SCREENSHOTS; this
# script runs the ones the README shows and copies them into docs/.
set -euo pipefail
cd "$(dirname "$0")/.."
shots=$(mktemp -d)
trap 'rm -rf "$shots"' EXIT
export TESSERA_SCREENSHOTS=$shots
go test -count=1 -run 'TestBrowserNarrowViewport|TestBrowserStalenessTaintStatus|TestBrowserLineageGraph|TestBrowserRunsPageAndChunkTimeline|TestBrowserDarkModeFollowsSystem|TestBrowserNewBackfillForm|TestBrowserPhoneAssetGrid' ./web/ >/dev/null
# picture in docs/  ←  screenshot the tests saved
declare -A pick=(
  [overview.png]=lineage-overview-1280
  [asset-grid.png]=narrow-1280-asset
  [asset-multi.png]=narrow-1280-asset-multi
  [asset-staleness.png]=asset-staleness
  [status-board.png]=status-board
  [backfill-running.png]=narrow-1280-backfill
  [new-backfill.png]=new-backfill-1280
  [runs.png]=runs-1280
  [chunk-timeline.png]=backfill-chunk-timeline-1280
  [dark-overview.png]=dark-1280-overview
  [phone-asset.png]=phone-grid-ml.features
  [phone-backfill.png]=narrow-390-backfill
)
for dst in "${!pick[@]}"; do
  src="$shots/${pick[$dst]}.png"
  if [[ ! -f $src ]]; then echo "missing screenshot ${pick[$dst]} (for docs/$dst)" >&2; exit 1; fi
  cp "$src" "docs/$dst"
done
echo "refreshed ${#pick[@]} pictures in docs/"
