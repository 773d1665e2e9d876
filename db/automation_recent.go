package db

import (
	"context"
	"encoding/json"
)

// The Automation and Sensors pages and the API's lists read the newest
// history of every schedule or sensor in one query each, however many the
// workspace declares: the names go in as one JSON array (json_each), and
// a correlated subquery takes each one's newest rows on its index.

func namesJSON(names []string) string {
	if names == nil {
		names = []string{}
	}
	b, _ := json.Marshal(names)
	return string(b)
}

// RecentTicks answers the newest n ticks of each of schedules (newest
// first), in one query.
func (s *Store) RecentTicks(ctx context.Context, schedules []string, n int) (map[string][]Tick, error) {
	key := tickKey(s.dialect)
	return recentBy(ctx, s, func(t Tick) string { return t.Schedule }, `SELECT t.* FROM `+jsonTexts(s.dialect)+` AS n JOIN schedule_ticks AS t ON t.`+key+` IN (
			SELECT `+key+` FROM schedule_ticks WHERE schedule = n.value ORDER BY scheduled_for DESC, id DESC LIMIT ?)
		ORDER BY t.schedule, t.scheduled_for DESC, t.id DESC`, schedules, n)
}

// RecentSensorEvaluations answers the newest n evaluations (dry runs and
// resets included) of each of sensors (newest first), in one query.
func (s *Store) RecentSensorEvaluations(ctx context.Context, sensors []string, n int) (map[string][]SensorEvaluation, error) {
	return recentBy(ctx, s, func(e SensorEvaluation) string { return e.Sensor }, `SELECT e.* FROM `+jsonTexts(s.dialect)+` AS n JOIN sensor_evaluations AS e ON e.id IN (
			SELECT id FROM sensor_evaluations WHERE sensor = n.value ORDER BY id DESC LIMIT ?)
		ORDER BY e.sensor, e.id DESC`, sensors, n)
}

// RecentSensorEvents answers the newest n pushed events of each of sensors
// (newest first), in one query.
func (s *Store) RecentSensorEvents(ctx context.Context, sensors []string, n int) (map[string][]SensorEvent, error) {
	return recentBy(ctx, s, func(e SensorEvent) string { return e.Sensor }, `SELECT e.* FROM `+jsonTexts(s.dialect)+` AS n JOIN sensor_events AS e ON e.sensor = n.value AND e.message_id IN (
			SELECT message_id FROM sensor_events WHERE sensor = n.value ORDER BY received_at DESC, message_id DESC LIMIT ?)
		ORDER BY e.sensor, e.received_at DESC, e.message_id DESC`, sensors, n)
}

// recentBy runs query (the newest n rows of each of names, in one query)
// and groups its rows by name (of).
func recentBy[T any](ctx context.Context, s *Store, of func(T) string, query string, names []string, n int) (map[string][]T, error) {
	rows, err := selectAll[T](ctx, s.r, query, namesJSON(names), n)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]T, len(names))
	for _, r := range rows {
		out[of(r)] = append(out[of(r)], r)
	}
	return out, nil
}
