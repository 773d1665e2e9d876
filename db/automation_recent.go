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
	rows, err := selectAll[Tick](ctx, s.r, `SELECT t.* FROM json_each(?) AS n JOIN schedule_ticks AS t ON t.rowid IN (
			SELECT rowid FROM schedule_ticks WHERE schedule = n.value ORDER BY scheduled_for DESC, id DESC LIMIT ?)
		ORDER BY t.schedule, t.scheduled_for DESC, t.id DESC`, namesJSON(schedules), n)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]Tick, len(schedules))
	for _, t := range rows {
		out[t.Schedule] = append(out[t.Schedule], t)
	}
	return out, nil
}

// RecentSensorEvaluations answers the newest n evaluations (dry runs and
// resets included) of each of sensors (newest first), in one query.
func (s *Store) RecentSensorEvaluations(ctx context.Context, sensors []string, n int) (map[string][]SensorEvaluation, error) {
	rows, err := selectAll[SensorEvaluation](ctx, s.r, `SELECT e.* FROM json_each(?) AS n JOIN sensor_evaluations AS e ON e.id IN (
			SELECT id FROM sensor_evaluations WHERE sensor = n.value ORDER BY id DESC LIMIT ?)
		ORDER BY e.sensor, e.id DESC`, namesJSON(sensors), n)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]SensorEvaluation, len(sensors))
	for _, e := range rows {
		out[e.Sensor] = append(out[e.Sensor], e)
	}
	return out, nil
}

// RecentSensorEvents answers the newest n pushed events of each of sensors
// (newest first), in one query.
func (s *Store) RecentSensorEvents(ctx context.Context, sensors []string, n int) (map[string][]SensorEvent, error) {
	rows, err := selectAll[SensorEvent](ctx, s.r, `SELECT e.* FROM json_each(?) AS n JOIN sensor_events AS e ON e.sensor = n.value AND e.message_id IN (
			SELECT message_id FROM sensor_events WHERE sensor = n.value ORDER BY received_at DESC, message_id DESC LIMIT ?)
		ORDER BY e.sensor, e.received_at DESC, e.message_id DESC`, namesJSON(sensors), n)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]SensorEvent, len(sensors))
	for _, e := range rows {
		out[e.Sensor] = append(out[e.Sensor], e)
	}
	return out, nil
}
