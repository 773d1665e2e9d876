package handlers

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/views"
)

const timezonePath = "/settings/timezone"

// timezoneView is the setting's page model; current is the stored zone.
func (h *Handler) timezoneView(c echo.Context, current string) views.TimezoneView {
	loc := zoneOfC(c)
	v := views.TimezoneView{Zones: zoneNames, Current: current, Browser: browserZone(c.Request()),
		Shown: loc.String(), Example: fmtTime(loc, h.Now())}
	if current != "" && !slices.Contains(zoneNames, current) {
		// A zone outside the list (an alias such as Asia/Calcutta) stays choosable.
		v.Zones = append(slices.Clone(zoneNames), current)
	}
	return v
}

// TimezoneForm shows the display time zone setting (GET /settings/timezone).
func (h *Handler) TimezoneForm(c echo.Context) error {
	p := CurrentPrincipal(c)
	if p.Anonymous() {
		return Unauthorized("sign in to choose your display time zone")
	}
	current, err := h.Store.UserTimezone(c.Request().Context(), p.UserID)
	if err != nil {
		return err
	}
	v := h.timezoneView(c, current)
	if fl, ok := h.Auth.TakeFlash(p, timezonePath); ok {
		v.Notice = fl.Notice
	}
	return render(c, http.StatusOK, views.TimezonePage(page(c, "Time zone", "timezone"), v))
}

// checkZone is the zone a form names: "" (the browser's) or an IANA name
// the time zone database knows.
func checkZone(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", nil
	}
	if _, ok := LoadZone(name); !ok {
		return "", BadRequest("timezone", "%q is not a time zone: give an IANA name such as Europe/Berlin or America/New_York, UTC, or leave it empty for your browser's zone", truncateText(name, 64))
	}
	return name, nil
}

// SetTimezone stores the signed-in user's display time zone (POST
// /settings/timezone, field timezone): an IANA name, or empty for the
// browser's zone. Any role may set their own.
func (h *Handler) SetTimezone(c echo.Context) error {
	p := CurrentPrincipal(c)
	if p.Anonymous() {
		return Unauthorized("sign in to choose your display time zone")
	}
	ctx := c.Request().Context()
	zone, err := checkZone(c.FormValue("timezone"))
	var ue *UserError
	if errors.As(err, &ue) {
		current, err := h.Store.UserTimezone(ctx, p.UserID)
		if err != nil {
			return err
		}
		v := h.timezoneView(c, current)
		v.Error, v.Field = ue.Message, ue.Field
		return render(c, ue.Status, views.TimezonePage(page(c, "Time zone", "timezone"), v))
	}
	if err := h.Store.SetUserTimezone(ctx, p.UserID, zone, h.Now()); err != nil {
		return err
	}
	notice := "Times are now shown in " + zone + "."
	if zone == "" {
		notice = "Times are now shown in your browser's time zone."
	}
	h.Auth.SetFlash(p, Flash{Page: timezonePath, Notice: notice})
	return c.Redirect(http.StatusSeeOther, timezonePath)
}
